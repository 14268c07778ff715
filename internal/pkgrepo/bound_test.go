package pkgrepo_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// A server whose ref advertisement never ends is cut at MaxAdvertisementBytes: the fetch fails
// with ErrAnswerTooLarge and says so, the client hangs up, and the mirror keeps what it had.
func TestEndlessAdvertisementIsCut(t *testing.T) {
	endless, e := gittest.WithEndlessAdvertisement("catalog")
	srv := gittest.NewServer(t, endless)
	srv.CreateRepo(t, "catalog")
	gittest.Commit(t, srv.Dir("catalog"), "", map[string]string{"app/Kptfile": kptfile}, "app/v1")
	ctx := context.Background()
	store := pkgrepo.NewStore(t.TempDir())
	remote := pkgrepo.Remote{URL: srv.URL + "/catalog.git"}
	if _, err := store.Refresh(ctx, remote); err != nil {
		t.Fatal(err)
	}

	e.On.Store(true)
	_, err := store.Refresh(ctx, remote)
	checkErr(t, err, pkgrepo.ErrAnswerTooLarge)
	if want := "ref advertisement was larger than 32Mi"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	select {
	case <-e.Ended():
	case <-time.After(time.Minute):
		t.Fatal("the server is still sending a minute after the fetch failed")
	}
	if hungUp, sent := e.HungUp(); !hungUp {
		t.Fatalf("the client read all %d bytes the server sent", sent)
	}

	e.On.Store(false)
	rev, err := store.Resolve(ctx, remote, "app", "v1")
	if err != nil || rev.Number != 1 {
		t.Fatalf("Resolve after the cut = %+v, %v; want v1", rev, err)
	}
}

// largeRepo is a repository whose one commit holds an incompressible file of size bytes.
func largeRepo(t *testing.T, srv *gittest.Server, name string, size int) {
	t.Helper()
	srv.CreateRepo(t, name)
	noise := make([]byte, size*3/4)
	_, _ = rand.Read(noise)
	gittest.Commit(t, srv.Dir(name), "", map[string]string{"app/Kptfile": kptfile, "app/noise.txt": base64.StdEncoding.EncodeToString(noise)}, "app/v1")
}

// A pack larger than Store.MaxPackBytes is cut, over http and over ssh; a Store with the default
// bound fetches the same repository.
func TestLargePackIsCut(t *testing.T) {
	srv := gittest.NewServer(t)
	largeRepo(t, srv, "big", 4<<20)
	ss := srv.ServeSSH(t)
	ctx := context.Background()
	for name, remote := range map[string]pkgrepo.Remote{
		"http": {URL: srv.URL + "/big.git"},
		"ssh":  {URL: ss.URL("big"), Auth: pkgrepo.Auth{Identity: string(ss.ClientKey), KnownHosts: ss.KnownHosts}},
	} {
		t.Run(name, func(t *testing.T) {
			store := pkgrepo.NewStore(t.TempDir())
			store.MaxPackBytes = 1 << 20
			pkgrepo.SetMaxAdvertisement(store, 64<<10)
			_, err := store.Resolve(ctx, remote, "app", "v1")
			checkErr(t, err, pkgrepo.ErrAnswerTooLarge)
			want := map[string]string{"http": "answer was larger than 1Mi", "ssh": "more than 1088Ki over one ssh connection"}[name]
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--git-max-pack-size") {
				t.Errorf("error %q does not say %q and name the flag", err, want)
			}
			if rev, err := pkgrepo.NewStore(t.TempDir()).Resolve(ctx, remote, "app", "v1"); err != nil || rev.Number != 1 {
				t.Fatalf("Resolve with the default bound = %+v, %v; want v1", rev, err)
			}
		})
	}
}
