package ocipkg

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/internal/ocitest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// The cache reuses a resolved revision within its TTL and drops expired entries as it grows, so
// a controller whose tenants and packages come and go does not keep every lookup it ever made.
func TestCacheReusesAndEvicts(t *testing.T) {
	host := ocitest.NewRegistry(t, nil)
	mustPush(t, host+"/team/web:v1", pkgFiles("1"), Options{Insecure: true})
	ctx := context.Background()
	c := &Cache{TTL: time.Hour}
	remote := func(i int) pkgrepo.Remote {
		return pkgrepo.Remote{URL: host + "/team", OCI: true, Insecure: true, Scope: fmt.Sprintf("tenant-%d/", i)}
	}
	first, err := c.Resolve(ctx, remote(0), "web", "latest")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.Resolve(ctx, remote(0), "web", "latest"); err != nil || again != first || len(c.entries) != 1 {
		t.Fatalf("second resolve = %+v, %v with %d entries; want the cached one", again, err, len(c.entries))
	}
	c.TTL = time.Nanosecond // every entry expires at once from now on
	for i := 1; i <= 1100; i++ {
		if _, err := c.Resolve(ctx, remote(i), "web", "v1"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.entries); n >= 1024 {
		t.Errorf("%d entries after 1100 lookups that all expired: want the expired ones dropped", n)
	}
}
