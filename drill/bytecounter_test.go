package drill_test

import (
	"io"
	"net"
	"testing"
)

// TestByteCounterCountsBeforeDelivery: a byte the client has read is
// already counted. Row 1 measures an acquire's answer between two reads of
// the counter; a count that lagged the delivery put the previous release's
// answer in the measure, and the cut then landed in A's release.
func TestByteCounterCountsBeforeDelivery(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() { // owner: this test; ends when the cleanup closes l
		s, err := l.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		io.Copy(s, s) // echo
	}()
	counter := startByteCounter(t, l.Addr().String())
	c, err := net.Dial("tcp", counter.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := make([]byte, 1)
	for i := range int64(10000) {
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		if got := counter.down.Load(); got < i+1 {
			t.Fatalf("after %d bytes read, the counter says %d", i+1, got)
		}
	}
}
