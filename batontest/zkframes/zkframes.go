// Package zkframes is a TCP proxy to a ZooKeeper server that counts the
// request frames its clients send, by opcode. Tests that check how many
// requests a recipe makes use it: it sees only the clients dialled
// through it, never another test's, and tells pings apart by their xid,
// not by a timing window, so the counts are exact.
package zkframes

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// Counter is one proxy. Its connections end at the end of the test.
type Counter struct {
	Addr string // where the clients dial

	mu    sync.Mutex
	ops   map[int32]int // requests by opcode since the last Take
	total int64         // requests since Start, pings left out
}

// pingXid is the xid of a ping frame: the session's heartbeat, not a
// recipe's request.
const pingXid = -2

// Start listens on a loopback port and forwards every connection to
// upstream until the test ends.
func Start(t testing.TB, upstream string) *Counter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("zkframes: Listen = %v", err)
	}
	c := &Counter{Addr: ln.Addr().String(), ops: make(map[int32]int)}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, x := range conns {
			x.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() { // owner: the test; ends when the listener closes
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, down, up)
			mu.Unlock()
			wg.Go(func() { c.forward(up, down); up.Close() })        // owner: the test
			wg.Go(func() { _, _ = io.Copy(down, up); down.Close() }) // owner: the test
		}
	})
	return c
}

// forward copies frames (a 4-byte length, then the body) from the client
// to the server, counting requests: the first frame is the connect
// request; every later one starts with its xid and opcode.
func (c *Counter) forward(up, down net.Conn) {
	r := bufio.NewReader(down)
	for first := true; ; first = false {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if !first && len(body) >= 8 && int32(binary.BigEndian.Uint32(body[:4])) != pingXid {
			c.mu.Lock()
			c.ops[int32(binary.BigEndian.Uint32(body[4:8]))]++
			c.total++
			c.mu.Unlock()
		}
		if _, err := up.Write(append(hdr[:], body...)); err != nil {
			return
		}
	}
}

// Take returns the requests by opcode since the last Take.
func (c *Counter) Take() map[int32]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = make(map[int32]int)
	return ops
}

// Requests returns the requests since Start, pings left out.
func (c *Counter) Requests() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}
