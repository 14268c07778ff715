package reliability

import (
	"io"
	"net"
	"sync"
	"testing"
)

// apiProxy is a TCP proxy in front of the API server that can go down like a restarting API
// server: every connection is cut and new ones are refused until it comes back.
type apiProxy struct {
	target string
	ln     net.Listener
	addr   string

	mu    sync.Mutex
	conns map[net.Conn]bool
}

func newAPIProxy(t *testing.T, target string) *apiProxy {
	t.Helper()
	p := &apiProxy{target: target, conns: map[net.Conn]bool{}}
	p.up(t, "127.0.0.1:0")
	t.Cleanup(p.down)
	return p
}

func (p *apiProxy) up(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p.ln, p.addr = ln, ln.Addr().String()
	go p.serve(ln)
}

func (p *apiProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

func (p *apiProxy) pipe(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
	_, _ = io.Copy(c, s)
	_ = c.Close()
}

// down refuses new connections and cuts every open one.
func (p *apiProxy) down() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]bool{}
}
