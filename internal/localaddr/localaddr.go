// Package localaddr gives the processes that tests and the bench start loopback addresses to
// listen on, and tells when one was taken before the process bound it.
package localaddr

import (
	"bytes"
	"errors"
	"net"
)

// Free returns n distinct loopback addresses ("127.0.0.1:PORT") free now. Their listeners are
// held until all n are chosen, so the kernel cannot hand out one port twice, and closed when Free
// returns: the process they are for binds them a moment later, and in between any process on the
// machine can take one (an outgoing connection's ephemeral port is enough). A process that then
// exits says so in its log (Taken): start it again on new addresses, up to Attempts times.
func Free(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// Attempts bounds how often a process is started again on new addresses.
const Attempts = 5

// ErrTaken is why a process exited at start when Taken says so.
var ErrTaken = errors.New("another process took an address before the process bound it")

// Taken reports whether a process's log says it could not bind an address another process had
// taken.
func Taken(log []byte) bool { return bytes.Contains(log, []byte("address already in use")) }
