package cluster

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Front is a TCP forwarder in front of one server that counts the
// connections clients open to it: while the server is down each one is
// accepted and closed at once, so the count is the clients' reconnect
// attempts, the figure that shows a reconnect storm or its absence.
type Front struct {
	Addr     string
	upstream string
	ln       net.Listener
	accepts  atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
}

// StartFront listens on a free loopback port and forwards to upstream.
func StartFront(upstream string) (*Front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Front{Addr: ln.Addr().String(), upstream: upstream, ln: ln, conns: map[net.Conn]struct{}{}}
	f.wg.Go(f.accept) // owner: f; ends when Close closes the listener
	return f, nil
}

// Accepts returns how many connections clients have opened so far.
func (f *Front) Accepts() int64 { return f.accepts.Load() }

func (f *Front) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.accepts.Add(1)
		f.wg.Go(func() { f.serve(c) }) // owner: f; ends with either side
	}
}

func (f *Front) serve(c net.Conn) {
	up, err := net.Dial("tcp", f.upstream)
	if err != nil {
		c.Close()
		return
	}
	if !f.track(c, up) {
		return
	}
	defer f.untrack(c, up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) { _, _ = io.Copy(dst, src); done <- struct{}{} }
	go pipe(up, c) // owner: serve; both pipes end once either conn is closed
	go pipe(c, up)
	<-done
	c.Close()
	up.Close()
	<-done
}

func (f *Front) track(cs ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil { // closed
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *Front) untrack(cs ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		delete(f.conns, c)
	}
}

// Close stops listening, cuts every connection and waits for its
// goroutines.
func (f *Front) Close() {
	f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
}
