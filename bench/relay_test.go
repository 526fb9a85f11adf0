package bench_test

import (
	"net"
	"sync"
	"testing"
)

// relay is what the counting proxies share: a loopback listener that
// forwards each connection to one server through two pumps the proxy
// supplies, and a Close that cuts every connection and waits for them.
type relay struct {
	ln       net.Listener
	upstream string
	// pumps returns one connection's pair: up copies client → server,
	// down server → client. They may share state (made per connection).
	pumps func() (up, down func(dst, src net.Conn))

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup // the accept loop and every pump
}

// startRelay listens on a loopback port for upstream; closed at cleanup.
// what names the proxy in a failure.
func startRelay(tb testing.TB, what, upstream string, pumps func() (up, down func(dst, src net.Conn))) *relay {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("%s: listen: %v", what, err)
	}
	r := &relay{ln: ln, upstream: upstream, pumps: pumps, conns: make(map[net.Conn]struct{})}
	r.wg.Add(1)
	go r.accept() // owner: r; ends when Close closes the listener
	tb.Cleanup(r.Close)
	return r
}

// Addr is the address clients dial instead of the server's.
func (r *relay) Addr() string { return r.ln.Addr().String() }

// Conns is the number of proxied connections open now (each has two
// pump goroutines).
func (r *relay) Conns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns) / 2
}

// Close stops accepting, cuts every connection and waits for the pumps.
func (r *relay) Close() {
	r.mu.Lock()
	r.closed = true
	_ = r.ln.Close()
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *relay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		r.conns[c] = struct{}{}
	}
	return true
}

func (r *relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(r.conns, c)
	}
}

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		s, err := net.Dial("tcp", r.upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !r.track(c, s) {
			return
		}
		up, down := r.pumps()
		var once sync.Once
		done := func() { once.Do(func() { r.untrack(c, s) }) }
		r.wg.Add(2)
		go func() { // owner: r; ends when either side closes
			defer r.wg.Done()
			defer done()
			up(s, c)
		}()
		go func() { // owner: r; ends when either side closes
			defer r.wg.Done()
			defer done()
			down(c, s)
		}()
	}
}

// pump copies src to dst, calling seen before forwarding each read.
func pump(dst, src net.Conn, seen func(chunk []byte)) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			seen(buf[:n])
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or closed: the caller closes both sides
		}
	}
}
