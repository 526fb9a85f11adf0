package redislock_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/redislock"
)

// TestHolderRecord: every recipe's grant stores the client's holder
// record (Options.Process) with it, and Inspect reads it back; a client
// without one records this process.
func TestHolderRecord(t *testing.T) {
	t.Parallel()
	rdb := redisClient(t, redisAddr(t))
	prefix := testPrefix(t, rdb)
	p := baton.Process{Host: "web-1", PID: 4242, Program: "worker", Labels: map[string]string{"team": "pay"}}
	c := newClient(t, rdb, redislock.Options{Prefix: prefix, Process: p})
	m, _ := c.Mutex("rec/mutex")
	rw, _ := c.RWMutex("rec/rw")
	w, _ := c.RWMutex("rec/write")
	s, _ := c.Semaphore("rec/sem", 3)
	e, _ := c.Election("rec/elect")
	campaign := func(ctx context.Context) (*baton.Lease, error) {
		ld, err := e.Campaign(ctx)
		if err != nil {
			return nil, err
		}
		return ld.Lease(), nil
	}
	for _, tc := range []struct {
		name, recipe string
		take         func(context.Context) (*baton.Lease, error)
	}{
		{"rec/mutex", "mutex", m.Lock},
		{"rec/rw", "read", rw.RLock},
		{"rec/write", "write", w.Lock},
		{"rec/sem", "permit", s.Acquire},
		{"rec/elect", "leader", campaign},
	} {
		l, err := tc.take(opCtx(t, 5*time.Second))
		if err != nil {
			t.Fatalf("%s: %v", tc.recipe, err)
		}
		in, err := redislock.Inspect(opCtx(t, 5*time.Second), c, tc.name)
		if err != nil {
			t.Fatalf("Inspect(%q) = %v", tc.name, err)
		}
		if len(in.Entries) != 1 || in.Entries[0].Recipe != tc.recipe || in.Entries[0].Owner != l.Owner() {
			t.Fatalf("Inspect(%q) = %+v, want the %s grant of %s", tc.name, in.Entries, tc.recipe, l.Owner())
		}
		got := in.Entries[0].Process
		if got.Host != p.Host || got.PID != p.PID || got.Program != p.Program || got.Labels["team"] != "pay" {
			t.Errorf("%s: holder record = %+v, want %+v", tc.recipe, got, p)
		}
		if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
			t.Errorf("%s: Release = %v", tc.recipe, err)
		}
	}

	d := newClient(t, rdb, redislock.Options{Prefix: prefix})
	l := lock(t, d, "rec/default")
	defer l.Release(opCtx(t, 5*time.Second))
	in, err := redislock.Inspect(opCtx(t, 5*time.Second), d, "rec/default")
	if err != nil || len(in.Entries) != 1 {
		t.Fatalf("Inspect = %+v, %v; want the holder", in, err)
	}
	host, _ := os.Hostname()
	if got := in.Entries[0].Process; got.Host != host || got.PID != os.Getpid() || got.Program == "" {
		t.Errorf("default holder record = %+v, want host %q, pid %d and the program's name", got, host, os.Getpid())
	}
}
