package zklock

import (
	"encoding/binary"
	"testing"
	"time"
)

// frame is one ZooKeeper frame: a 4-byte length, then a body whose first
// four bytes are xid.
func frame(xid int32) []byte {
	b := make([]byte, 4+16)
	binary.BigEndian.PutUint32(b, 16)
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	return b
}

// TestTrackerQueue: every reply acks the oldest request not answered yet,
// in order, watch notifications ack nothing, and the queue of send times
// neither allocates once warm nor grows while requests stay in flight.
func TestTrackerQueue(t *testing.T) {
	tr := newTracker()
	c := &trackedConn{t: tr, gotHello: true}
	at := func(i int) time.Time { return tr.base.Add(time.Duration(i+1) * time.Second) }
	send := func(i int) {
		c.writeTime = at(i)
		c.wr.feed(frame(int32(i)), 0, c.onRequest)
	}
	reply := func(xid int32) { c.rd.feed(frame(xid), 16, c.onReply) }
	acked := func() time.Time { a, _ := tr.lastAckTime(); return a }

	// Two in flight, answered in order; a notification in between.
	send(0)
	send(1)
	reply(0)
	reply(-1)
	if got := acked(); !got.Equal(at(0)) {
		t.Fatalf("after the first reply and a notification: acked %v, want %v", got.Sub(tr.base), at(0).Sub(tr.base))
	}
	reply(1)
	if got := acked(); !got.Equal(at(1)) {
		t.Fatalf("after the second reply: acked %v, want %v", got.Sub(tr.base), at(1).Sub(tr.base))
	}
	reply(2) // a reply without a request (never happens) pops nothing
	if c.head != 0 || len(c.sends) != 0 {
		t.Fatalf("all answered: head %d, %d queued; want 0, 0", c.head, len(c.sends))
	}

	// A lock+unlock's three requests, one at a time: nothing allocated.
	i := 2
	if n := testing.AllocsPerRun(100, func() { send(i); reply(int32(i)); i++ }); n != 0 {
		t.Errorf("request and reply: %v allocations, want 0", n)
	}

	// Always one request in flight: the queue stays small.
	send(i)
	for range 10000 {
		i++
		send(i)
		reply(int32(i - 1))
		if got := acked(); !got.Equal(at(i - 1)) {
			t.Fatalf("request %d answered: acked %v, want %v", i-1, got.Sub(tr.base), at(i-1).Sub(tr.base))
		}
	}
	if len(c.sends)-c.head != 1 || cap(c.sends) > 256 {
		t.Errorf("one in flight after 10 000: %d queued, capacity %d; want 1, ≤ 256", len(c.sends)-c.head, cap(c.sends))
	}
}
