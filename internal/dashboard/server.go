package dashboard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Server serves a dashboard on an address until its context ends. As a controller-runtime
// Runnable it runs on every replica, leader or not: it only reads the cache.
type Server struct {
	Addr    string
	Handler http.Handler
}

// Start listens on s.Addr and serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	return Serve(ctx, l, s.Handler)
}

// NeedLeaderElection is false: every replica serves its own cache.
func (s *Server) NeedLeaderElection() bool { return false }

// Serve serves h on l until ctx ends, then shuts down, giving requests in flight a few seconds.
func Serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdown)
	if serveErr := <-done; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	return err
}

// HostsFor is Options.Hosts for a dashboard listening on addr: the loopback names when addr is a
// loopback address (or localhost), nil (any name) otherwise.
func HostsFor(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return LoopbackHosts
	}
	return nil
}
