package bench_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
)

// zkOps names ZooKeeper's request opcodes (the jute OpCode values).
var zkOps = map[int32]string{
	1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData",
	6: "getACL", 7: "setACL", 8: "getChildren", 9: "sync", 11: "ping",
	12: "getChildren2", 13: "check", 14: "multi", 15: "create2",
	16: "reconfig", 17: "checkWatches", 18: "removeWatches",
	19: "createContainer", 20: "createTTL", 21: "multiRead",
	100: "auth", 101: "setWatches", 103: "getEphemerals",
	104: "getAllChildrenNumber", 105: "setWatches2", 106: "addWatch",
	-11: "closeSession",
}

// zkFrameProxy forwards TCP connections to a ZooKeeper server and counts
// the requests its clients send, by opcode, by reading the length-prefixed
// frames of the client → server stream (the first frame of a connection is
// the ConnectRequest, which has no header). It counts on the client's side
// of the wire, so other clients of a shared server never enter the count,
// and pings are told apart from requests by their opcode, not by a timing
// window: the count is exact.
type zkFrameProxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	ops    map[string]int64
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startZKFrameProxy listens on a loopback port for upstream; closed at
// cleanup.
func startZKFrameProxy(tb testing.TB, upstream string) *zkFrameProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("zkFrameProxy: listen: %v", err)
	}
	p := &zkFrameProxy{ln: ln, upstream: upstream, ops: make(map[string]int64), conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept() // owner: p; ends when Close closes the listener
	tb.Cleanup(p.Close)
	return p
}

// Addr is the address clients dial instead of the server's.
func (p *zkFrameProxy) Addr() string { return p.ln.Addr().String() }

// snapshot copies the per-opcode counts ("connect" counts sessions
// opened).
func (p *zkFrameProxy) snapshot() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int64, len(p.ops))
	for k, v := range p.ops {
		out[k] = v
	}
	return out
}

// requests is the running count of requests, pings and connects left out.
func (p *zkFrameProxy) requests() int64 {
	var n int64
	for k, v := range p.snapshot() {
		if k != "ping" && k != "connect" {
			n += v
		}
	}
	return n
}

// Conns is the number of proxied connections open now (each has two
// pump goroutines).
func (p *zkFrameProxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2
}

// all is the running count of every frame clients sent after their
// ConnectRequest, pings included: what the server receives from them.
func (p *zkFrameProxy) all() int64 {
	var n int64
	for k, v := range p.snapshot() {
		if k != "connect" {
			n += v
		}
	}
	return n
}

func (p *zkFrameProxy) add(op string) {
	p.mu.Lock()
	p.ops[op]++
	p.mu.Unlock()
}

// Close stops accepting, cuts every connection and waits for the pumps.
func (p *zkFrameProxy) Close() {
	p.mu.Lock()
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *zkFrameProxy) track(cs ...net.Conn) bool {
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

func (p *zkFrameProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *zkFrameProxy) accept() {
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
		var once sync.Once
		done := func() { once.Do(func() { p.untrack(c, s) }) }
		p.wg.Add(2)
		go func() { // owner: p; ends when either side closes
			defer p.wg.Done()
			defer done()
			p.frames(s, c)
		}()
		go func() { // owner: p; ends when either side closes
			defer p.wg.Done()
			defer done()
			pump(c, s, func() {})
		}()
	}
}

// frames copies src to dst frame by frame, counting each by opcode.
func (p *zkFrameProxy) frames(dst, src net.Conn) {
	r := bufio.NewReaderSize(src, 64<<10)
	var hdr [4]byte
	first := true
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > 64<<20 {
			return // not a ZooKeeper stream
		}
		body := make([]byte, 4+n)
		copy(body, hdr[:])
		if _, err := io.ReadFull(r, body[4:]); err != nil {
			return
		}
		switch {
		case first:
			p.add("connect")
			first = false
		case n >= 8:
			op := int32(binary.BigEndian.Uint32(body[8:12]))
			name, ok := zkOps[op]
			if !ok {
				name = "op" + strconv.Itoa(int(op))
			}
			p.add(name)
		}
		if _, err := dst.Write(body); err != nil {
			return
		}
	}
}
