package zklock_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton/zklock"
)

// TestRecheckMissingSession: a session missing from one "dump" is looked
// for in the next ones before Inspect calls it dead (ZooKeeper's dump can
// miss a live session that moves between expiry buckets while it is
// read), and a session no dump lists stays missing. The four-letter
// words come from a stand-in that answers as a standalone server whose
// first dump misses session 0x2: the race cannot be provoked on demand.
func TestRecheckMissingSession(t *testing.T) {
	var dumps atomic.Int32
	addr := fourLetterServer(t, func(word string) string {
		if word == "srvr" {
			return "Zookeeper version: 3.8\nMode: standalone\n"
		}
		sessions := "\t0x1\n"
		if dumps.Add(1) > 1 {
			sessions += "\t0x2\n"
		}
		return "SessionTracker dump:\nSession Sets (1)/(1):\n1 expire at Thu Jan 01 00:00:00 UTC 1970:\n" + sessions +
			"ephemeral nodes dump:\nSessions with Ephemerals (0):\n"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	live := zklock.RecheckMissing(ctx, []string{addr}, []string{"0x1", "0x2", "0x3"}, map[string]bool{"0x1": true})
	if !live["0x2"] {
		t.Errorf("live after the recheck = %v, want 0x2 (listed by the second dump)", live)
	}
	if live["0x3"] {
		t.Errorf("live after the recheck = %v, want 0x3 missing (no dump lists it)", live)
	}
	if n := dumps.Load(); n != 2 {
		t.Errorf("dumps read = %d, want 2: 0x3 stays missing, so every recheck is made", n)
	}
}

// fourLetterServer answers each connection's four-letter word with
// reply(word) and closes it, until the test ends.
func fourLetterServer(t *testing.T, reply func(word string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() { // owned by the test: ends when the listener closes
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			word := make([]byte, 4)
			if _, err := io.ReadFull(conn, word); err == nil {
				_, _ = io.Copy(conn, strings.NewReader(reply(string(word))))
			}
			_ = conn.Close()
		}
	}()
	return ln.Addr().String()
}
