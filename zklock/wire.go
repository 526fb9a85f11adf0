package zklock

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tracker watches the bytes of one ZooKeeper session's TCP connections so
// baton knows what go-zookeeper hides: the negotiated session timeout, the
// session ID the server granted, and — the point of it all — a lower bound
// on the last time the server heard from this client.
//
// ZooKeeper expires a session when it has heard nothing from the client for
// the negotiated timeout T. A reply received for a request proves the server
// heard the client no earlier than the time that request was written, and
// the server answers a session's requests in order (pings included), so
// every reply pops the oldest outstanding send time. lastAck is therefore a
// point in time before which the server certainly heard us; the session
// cannot have expired before lastAck+T. Receiving bytes alone proves
// nothing: watch notifications (xid -1) are pushed by the server even when
// none of our packets arrive (a one-way partition), which is why the rule
// "last receive + T" used by go-zookeeper's read deadline is not enough.
type tracker struct {
	base time.Time // monotonic origin for the atomics below

	lastAck    atomic.Int64 // nanoseconds since base; 0 = never
	negotiated atomic.Int64 // smallest negotiated timeout seen, ns; 0 = unknown
	sessionID  atomic.Int64 // from the latest connect response; 0 = expired
	wantAck    atomic.Bool  // the watchdog asks to be woken by the next reply
	acked      chan struct{}
}

func newTracker() *tracker {
	return &tracker{base: time.Now(), acked: make(chan struct{}, 1)}
}

// lastAckTime returns the lower bound on the server's last contact, and
// false before the first reply.
func (t *tracker) lastAckTime() (time.Time, bool) {
	n := t.lastAck.Load()
	if n == 0 {
		return time.Time{}, false
	}
	return t.base.Add(time.Duration(n)), true
}

func (t *tracker) ack(sent time.Time) {
	n := int64(sent.Sub(t.base))
	if n <= 0 {
		n = 1
	}
	for {
		old := t.lastAck.Load()
		if n <= old || t.lastAck.CompareAndSwap(old, n) {
			break
		}
	}
	if t.wantAck.Load() {
		select {
		case t.acked <- struct{}{}:
		default:
		}
	}
}

func (t *tracker) connected(timeoutMs int32, sessionID int64) {
	if timeoutMs > 0 {
		d := int64(time.Duration(timeoutMs) * time.Millisecond)
		for {
			old := t.negotiated.Load()
			if (old != 0 && old <= d) || t.negotiated.CompareAndSwap(old, d) {
				break
			}
		}
	}
	t.sessionID.Store(sessionID)
}

// dialer is the go-zookeeper Dialer that wraps every connection of the
// session in a trackedConn.
func (t *tracker) dialer(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return t.wrap(c), nil
}

// wrap returns c (plain frames: TCP, or TLS already unwrapped) tracked.
func (t *tracker) wrap(c net.Conn) net.Conn { return &trackedConn{Conn: c, t: t} }

// trackedConn parses ZooKeeper's length-prefixed frames in both directions.
// It never changes a byte.
type trackedConn struct {
	net.Conn
	t *tracker

	mu sync.Mutex
	// sends[head:] are the write times of requests not answered yet,
	// oldest first. The slice is reused from its start once all are
	// answered, so a request allocates nothing.
	sends     []time.Time
	head      int
	wr, rd    framer
	gotHello  bool // the first frame read (the connect response) was seen
	writeTime time.Time
}

func (c *trackedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	// The write time bounds the server's receive time from below.
	c.writeTime = time.Now()
	c.wr.feed(p, 0, c.onRequest)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *trackedConn) onRequest([]byte) {
	// A connection that always has requests in flight never empties the
	// queue: move what is left to the front once most of it is answered.
	if c.head >= 64 && 2*c.head >= len(c.sends) {
		n := copy(c.sends, c.sends[c.head:])
		c.sends, c.head = c.sends[:n], 0
	}
	c.sends = append(c.sends, c.writeTime)
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		// A connect response's prefix is protocolVersion, timeOut,
		// sessionID (16 bytes); a reply's is xid, zxid, err (16 bytes).
		c.rd.feed(p[:n], 16, c.onReply)
		c.mu.Unlock()
	}
	return n, err
}

func (c *trackedConn) onReply(pre []byte) {
	if !c.gotHello {
		c.gotHello = true
		if len(pre) >= 16 {
			c.t.connected(int32(binary.BigEndian.Uint32(pre[4:8])), int64(binary.BigEndian.Uint64(pre[8:16])))
		}
		c.pop()
		return
	}
	if len(pre) >= 4 && int32(binary.BigEndian.Uint32(pre[:4])) == -1 {
		return // a watch notification: pushed by the server, proves nothing
	}
	c.pop()
}

func (c *trackedConn) pop() {
	if c.head == len(c.sends) {
		return
	}
	sent := c.sends[c.head]
	c.head++
	if c.head == len(c.sends) {
		c.sends, c.head = c.sends[:0], 0
	}
	c.t.ack(sent)
}

// framer splits a byte stream into ZooKeeper frames (a 4-byte big-endian
// length, then the body) and reports the first want bytes of each body.
type framer struct {
	lenBuf [4]byte
	lenN   int
	inBody bool
	left   int
	pre    [16]byte
	preN   int
	fired  bool
}

func (f *framer) feed(p []byte, want int, fn func(pre []byte)) {
	for len(p) > 0 {
		if !f.inBody {
			n := copy(f.lenBuf[f.lenN:], p)
			f.lenN += n
			p = p[n:]
			if f.lenN < 4 {
				return
			}
			f.lenN = 0
			f.left = int(binary.BigEndian.Uint32(f.lenBuf[:]))
			f.preN, f.fired, f.inBody = 0, false, true
			if f.left == 0 {
				f.inBody = false
				fn(nil)
				continue
			}
		}
		n := min(len(p), f.left)
		if f.preN < want {
			f.preN += copy(f.pre[f.preN:want], p[:n])
		}
		f.left -= n
		p = p[n:]
		if !f.fired && (f.preN >= want || f.left == 0) {
			f.fired = true
			fn(f.pre[:f.preN])
		}
		if f.left == 0 {
			f.inBody = false
		}
	}
}
