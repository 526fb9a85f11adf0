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
	*relay

	mu  sync.Mutex
	ops map[string]int64
}

// startZKFrameProxy listens on a loopback port for upstream; closed at
// cleanup.
func startZKFrameProxy(tb testing.TB, upstream string) *zkFrameProxy {
	tb.Helper()
	p := &zkFrameProxy{ops: make(map[string]int64)}
	p.relay = startRelay(tb, "zkFrameProxy", upstream, func() (up, down func(dst, src net.Conn)) {
		return p.frames, func(dst, src net.Conn) { pump(dst, src, func([]byte) {}) }
	})
	return p
}

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
