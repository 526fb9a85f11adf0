// Package faultproxy is an embedded TCP fault proxy: baton drill injects
// its transport faults with it, and every engine's tests do. It is written
// on the standard library alone, so that importing it adds nothing to a
// module graph. A client dials Proxy.Addr instead of the server, and the
// faults go in at the transport: partitions, latency, lost responses,
// resets and refused connections. The server stays real.
//
// It is public because baton drill, a module of its own, ships it, and a
// user's drills of their own setup may use it too; its API is kept to what
// those drills need.
//
// Each accepted connection is a link: the client's connection, a fresh one
// to the upstream server, and a pipe per direction. A pipe is two
// goroutines: a reader that stamps each chunk with the time it was read and
// queues it, and a writer that applies the direction's faults to it and
// forwards it. Faults are per direction and per proxy, not per connection:
// one set with Blackhole, Latency, CutAfter or ResetPeer applies at once
// to the links already open and to those accepted later, until Heal. The
// writer re-reads the faults whenever they change, so a fault takes hold
// of a chunk still being held, and a healed latency lets held chunks go at
// once, in order.
//
// The end of a stream is carried like data, behind the bytes read before
// it, and ends the whole link when it reaches the other side: the proxy
// does not carry half-closes (none of the engines' protocols use them).
//
// Every goroutine belongs to the Proxy; Close ends them all and waits.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Direction picks the stream a fault applies to; "" means both.
type Direction string

const (
	// Upstream is client→server.
	Upstream Direction = "upstream"
	// Downstream is server→client (responses).
	Downstream Direction = "downstream"
)

// ErrClosed is returned by Accept on a closed proxy.
var ErrClosed = errors.New("faultproxy: proxy closed")

// acceptBackoff is the pause after a failed Accept that is not the
// listener's close (out of file descriptors, say), so that the loop does
// not spin.
const acceptBackoff = 10 * time.Millisecond

// Proxy forwards one listening address to one upstream server.
type Proxy struct {
	// Addr is the loopback address clients dial instead of the server.
	// It stays the same across Refuse and Accept.
	Addr string

	upstream string
	up, down *faults

	// ctx is cancelled by Close; it aborts dials to the upstream server.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine of the proxy

	mu     sync.Mutex
	ln     net.Listener // nil while refusing
	gen    uint64       // bumped by Refuse and Close: older accepts are dropped
	links  map[*link]struct{}
	closed bool
}

// Start opens a proxy on a free loopback port forwarding to upstream
// ("host:port"). The upstream server is dialed per accepted connection,
// so it need not be up yet.
func Start(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen for %s: %w", upstream, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		Addr:     ln.Addr().String(),
		upstream: upstream,
		up:       newFaults(),
		down:     newFaults(),
		ctx:      ctx,
		cancel:   cancel,
		links:    make(map[*link]struct{}),
	}
	p.mu.Lock()
	p.serveLocked(ln)
	p.mu.Unlock()
	return p, nil
}

// Close stops the proxy, cuts its connections and waits for every one of
// its goroutines to end. It may be called more than once.
func (p *Proxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.cancel()
		p.stopLocked()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Refuse stops listening and cuts every connection, so new dials are
// refused, as when the server is down. The faults stay in place.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopLocked()
}

// Accept listens again on the same address after Refuse; it does nothing
// on a proxy that is listening.
func (p *Proxy) Accept() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		return fmt.Errorf("faultproxy: listen again on %s: %w", p.Addr, err)
	}
	p.serveLocked(ln)
	return nil
}

// serveLocked starts accepting on ln.
func (p *Proxy) serveLocked(ln net.Listener) {
	p.ln = ln
	gen := p.gen
	p.wg.Go(func() { p.acceptLoop(ln, gen) })
}

// stopLocked closes the listener and every link. Links still being set up
// see the new generation when they register and close themselves.
func (p *Proxy) stopLocked() {
	p.gen++
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	p.closeLinksLocked()
}

func (p *Proxy) closeLinksLocked() {
	for l := range p.links {
		l.close(false)
	}
}

// acceptLoop runs until ln is closed (by Refuse or Close).
func (p *Proxy) acceptLoop(ln net.Listener, gen uint64) {
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			select {
			case <-time.After(acceptBackoff):
				continue
			case <-p.ctx.Done():
				return
			}
		}
		p.wg.Go(func() { p.serve(c, gen) })
	}
}

// serve dials the upstream server for client and runs the link until it
// ends. A failed dial closes the client's connection, as a server that is
// down would look through a real proxy.
func (p *Proxy) serve(client net.Conn, gen uint64) {
	var d net.Dialer
	server, err := d.DialContext(p.ctx, "tcp", p.upstream)
	if err != nil {
		_ = client.Close()
		return
	}
	l := newLink(client, server)
	if !p.register(l, gen) {
		l.close(false)
		return
	}
	defer p.unregister(l)
	l.run(p.up, p.down)
}

// register adds l to the live links unless the listener that accepted it
// has been closed since.
func (p *Proxy) register(l *link, gen uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || gen != p.gen {
		return false
	}
	p.links[l] = struct{}{}
	return true
}

func (p *Proxy) unregister(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
}
