package zkensemble

import (
	"io"
	"net"
	"sync"
	"time"
)

// Dials is a plain TCP forwarder that records when each connection was
// accepted: put one per client in front of a server (or of the server's
// fault proxy), and it counts that client's connection attempts, which a
// shared proxy cannot tell apart. Rejecting, it accepts each connection,
// counts it and closes it at once, as a server that refuses would look.
// Every goroutine belongs to the Dials; Close ends them.
type Dials struct {
	Addr     string
	upstream string
	ln       net.Listener
	wg       sync.WaitGroup

	mu     sync.Mutex
	times  []time.Time
	reject bool
	conns  map[net.Conn]struct{}
	closed bool
}

// NewDials listens on a free loopback port and forwards to upstream.
func NewDials(upstream string) (*Dials, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &Dials{Addr: ln.Addr().String(), upstream: upstream, ln: ln, conns: make(map[net.Conn]struct{})}
	d.wg.Go(d.accept)
	return d, nil
}

func (d *Dials) accept() {
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return
		}
		d.mu.Lock()
		d.times = append(d.times, time.Now())
		reject, closed := d.reject, d.closed
		d.mu.Unlock()
		if reject || closed {
			c.Close()
			continue
		}
		d.wg.Go(func() { d.forward(c) })
	}
}

func (d *Dials) forward(down net.Conn) {
	up, err := net.DialTimeout("tcp", d.upstream, time.Second)
	if err != nil {
		down.Close()
		return
	}
	if !d.track(down, up) {
		down.Close()
		up.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(up, down); up.Close(); down.Close() })
	io.Copy(down, up)
	down.Close()
	up.Close()
	wg.Wait()
	d.mu.Lock()
	delete(d.conns, down)
	delete(d.conns, up)
	d.mu.Unlock()
}

func (d *Dials) track(cs ...net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	for _, c := range cs {
		d.conns[c] = struct{}{}
	}
	return true
}

// Reject makes new connections fail at once (they are still counted);
// open ones are left alone.
func (d *Dials) Reject(on bool) {
	d.mu.Lock()
	d.reject = on
	d.mu.Unlock()
}

// Times returns the accept times of every connection so far.
func (d *Dials) Times() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.times...)
}

// Close stops listening, cuts the open connections and waits.
func (d *Dials) Close() {
	d.mu.Lock()
	d.closed = true
	for c := range d.conns {
		c.Close()
	}
	d.mu.Unlock()
	d.ln.Close()
	d.wg.Wait()
}

// PerSecond returns the largest number of times within any one-second
// window starting at one of them, among those at or after since.
func PerSecond(times []time.Time, since time.Time) int {
	most := 0
	for i, a := range times {
		if a.Before(since) {
			continue
		}
		n := 0
		for _, b := range times[i:] {
			if b.Sub(a) < time.Second {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}
