package localaddr

import (
	"net"
	"strings"
	"testing"
)

// TestFreeAddressesCanBeBoundAndTakenShows: Free's addresses are distinct and bindable, and a
// second bind of one fails with the error Taken recognizes in a process's log.
func TestFreeAddressesCanBeBoundAndTakenShows(t *testing.T) {
	addrs, err := Free(3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] || !strings.HasPrefix(a, "127.0.0.1:") {
			t.Errorf("addresses %v: want distinct loopback addresses", addrs)
		}
		seen[a] = true
	}
	l, err := net.Listen("tcp", addrs[0])
	if err != nil {
		t.Fatalf("bind %s: %v", addrs[0], err)
	}
	defer l.Close()
	_, err = net.Listen("tcp", addrs[0])
	if err == nil {
		t.Fatalf("a second bind of %s succeeded", addrs[0])
	}
	if !Taken([]byte(`{"level":"error","msg":"server error","error":"` + err.Error() + `"}`)) {
		t.Errorf("Taken does not recognize %q", err)
	}
	if Taken([]byte("starting manager")) {
		t.Error("Taken of a log without the error")
	}
}
