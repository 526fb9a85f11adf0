package bench_test

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// turnProxy forwards TCP connections to one server and counts round trips
// on the client's side of the wire: a burst of bytes from the client that
// follows a reply (or opens the connection) is one request flight. A
// pipeline of many commands sent before reading any reply is one flight,
// as it costs one network round trip; a transaction of four statements
// each waiting for its reply is four. That is the figure baton's targets
// speak of ("one round trip to acquire and one to release"), and
// it needs no cooperation from the server, which other clients share. A
// pipeline so long that the server answers its first commands before the
// client has sent the last counts twice or more: the count is exact for
// requests of a few kB.
//
// Only the counted twins of the measured pairs go through it: it adds two
// socket copies per direction, which would flatten the timing ratios.
type turnProxy struct {
	ln       net.Listener
	upstream string
	turns    atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup // the accept loop and every pump
}

// startTurnProxy listens on a loopback port for upstream; closed at cleanup.
func startTurnProxy(tb testing.TB, upstream string) *turnProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("turnProxy: listen: %v", err)
	}
	p := &turnProxy{ln: ln, upstream: upstream, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept() // owner: p; ends when Close closes the listener
	tb.Cleanup(p.Close)
	return p
}

// Addr is the address clients dial instead of the server's.
func (p *turnProxy) Addr() string { return p.ln.Addr().String() }

// Turns is the running count of request flights over every connection.
func (p *turnProxy) Turns() int64 { return p.turns.Load() }

// Conns is the number of proxied connections open now (each has two
// pump goroutines).
func (p *turnProxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2
}

// Close stops accepting, cuts every connection and waits for the pumps.
func (p *turnProxy) Close() {
	p.mu.Lock()
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *turnProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *turnProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *turnProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		s, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		// lastUp is true while the latest bytes went client → server: the
		// next upward burst after a reply starts a new flight.
		var lastUp atomic.Bool
		var once sync.Once
		done := func() { once.Do(func() { p.untrack(c, s) }) }
		p.wg.Add(2)
		go func() { // owner: p; ends when either side closes
			defer p.wg.Done()
			defer done()
			pump(s, c, func() {
				if !lastUp.Swap(true) {
					p.turns.Add(1)
				}
			})
		}()
		go func() { // owner: p; ends when either side closes
			defer p.wg.Done()
			defer done()
			// Marked before the reply is forwarded, so the client's next
			// request, which can only follow it, sees the mark.
			pump(c, s, func() { lastUp.Store(false) })
		}()
	}
}

// pump copies src to dst, calling seen before forwarding each read.
func pump(dst, src net.Conn, seen func()) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			seen()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or closed: the caller closes both sides
		}
	}
}
