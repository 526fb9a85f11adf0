package faultproxy

import (
	"bytes"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

const (
	// chunkSize is the most one read takes from a connection.
	chunkSize = 32 << 10
	// queueLen is how many chunks a direction holds before its reader
	// stops reading: enough that a latency does not throttle a stream,
	// bounded so that a long-held stream cannot grow without limit.
	queueLen = 1024
)

// chunk is what one read returned, stamped with when it was read.
type chunk struct {
	data []byte
	at   time.Time
	eof  bool // the source ended or failed: the link ends when this is delivered
}

// link is one proxied connection: the client's and the server's.
type link struct {
	client, server net.Conn
	done           chan struct{} // closed by close
	once           sync.Once
}

func newLink(client, server net.Conn) *link {
	return &link{client: client, server: server, done: make(chan struct{})}
}

// close closes both connections, with an RST instead of a FIN when reset
// is set, and stops the link's goroutines. Only the first call counts.
func (l *link) close(reset bool) {
	l.once.Do(func() {
		if reset {
			linger0(l.client)
			linger0(l.server)
		}
		_ = l.client.Close()
		_ = l.server.Close()
		close(l.done)
	})
}

// linger0 makes a close send an RST and drop unsent data.
func linger0(c net.Conn) {
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0)
	}
}

// run pipes both directions and returns when all four goroutines have
// ended, which is after close.
func (l *link) run(up, down *faults) {
	var wg sync.WaitGroup
	l.pipe(&wg, l.client, l.server, up)
	l.pipe(&wg, l.server, l.client, down)
	wg.Wait()
}

// pipe starts the reader and the writer of one direction. They share a
// queue so that a held chunk does not stop the next from being read (and
// stamped) on time.
func (l *link) pipe(wg *sync.WaitGroup, src, dst net.Conn, fs *faults) {
	q := make(chan chunk, queueLen)
	wg.Go(func() { l.read(src, q) })
	wg.Go(func() {
		defer l.close(false)
		l.write(dst, q, fs)
	})
}

// read queues what src sends, then its end.
func (l *link) read(src net.Conn, q chan<- chunk) {
	buf := make([]byte, chunkSize)
	for {
		n, err := src.Read(buf)
		at := time.Now()
		if n > 0 && !l.send(q, chunk{data: bytes.Clone(buf[:n]), at: at}) {
			return
		}
		if err != nil {
			l.send(q, chunk{at: at, eof: true})
			return
		}
	}
}

func (l *link) send(q chan<- chunk, c chunk) bool {
	select {
	case q <- c:
		return true
	case <-l.done:
		return false
	}
}

// write forwards the queued chunks to dst under the direction's faults.
// It returns when the link is to end: the stream ended, a write failed,
// a cut or a reset fell due, or the link was closed.
func (l *link) write(dst net.Conn, q <-chan chunk, fs *faults) {
	var epoch uint64 // the CutAfter being counted
	var sent int64   // bytes sent under it
	for {
		var c chunk
		select {
		case c = <-q:
		case <-l.done:
			return
		}
		f, ok := l.hold(c, fs)
		switch {
		case !ok:
			return
		case f.blackhole:
			continue // the end of the stream too: a partition carries no FIN
		case f.reset:
			l.resetAfter(f.resetAfter)
			return
		case c.eof:
			return
		}
		data, cut := c.data, false
		if f.cut {
			if epoch != f.cutEpoch {
				epoch, sent = f.cutEpoch, 0
			}
			if left := f.cutAfter - sent; int64(len(data)) >= left {
				data, cut = data[:left], true
			}
			sent += int64(len(data))
		}
		if len(data) > 0 {
			if _, err := dst.Write(data); err != nil {
				return
			}
		}
		if cut {
			return
		}
	}
}

// hold waits until c is due under the direction's latency and returns the
// faults in force then; false if the link closed meanwhile. Any change to
// the faults is looked at at once: a blackhole or a healed latency ends
// the wait, a new latency applies to c as it was read.
func (l *link) hold(c chunk, fs *faults) (fault, bool) {
	var delay, drawnFor, drawnJitter time.Duration
	drawn := false
	for {
		f, changed := fs.load()
		if f.blackhole || f.latency == 0 && f.jitter == 0 {
			return f, true
		}
		if !drawn || f.latency != drawnFor || f.jitter != drawnJitter {
			delay, drawnFor, drawnJitter, drawn = jittered(f.latency, f.jitter), f.latency, f.jitter, true
		}
		wait := time.Until(c.at.Add(delay))
		if wait <= 0 {
			return f, true
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-changed:
		case <-l.done:
			t.Stop()
			return f, false
		}
		t.Stop()
	}
}

// jittered is d plus a uniform draw from [-jitter, jitter).
func jittered(d, jitter time.Duration) time.Duration {
	if jitter <= 0 {
		return d
	}
	return d + time.Duration(rand.Int64N(2*int64(jitter))) - jitter
}

// resetAfter resets the link after d unless it closes first.
func (l *link) resetAfter(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		l.close(true)
	case <-l.done:
	}
}
