package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
)

// TestCounterOutOfRange: the nodes mint tokens with Lua numbers (doubles),
// exact only up to 2^53. Counters SET to -1 or to 2^53 on every node make
// an acquire fail at once with ErrBadCounter: no lock key on any node, the
// counters untouched. From 2^53-N a grant still gets a token ≤ 2^53, and
// the counters it raised refuse the next one.
func TestCounterOutOfRange(t *testing.T) {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	nodes := redlocktest.Clients(t, addrs)
	c := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})
	name := "counter"
	lockKey, counter := prefix+"lock:"+name, prefix+"counter"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	setAll := func(v string) {
		t.Helper()
		for i, n := range nodes {
			if err := n.Set(ctx, counter, v, 0).Err(); err != nil {
				t.Fatalf("node %d: SET %s %s = %v", i, counter, v, err)
			}
		}
	}
	m := redlocktest.Mutex(t, c, name)
	redlocktest.Release(t, redlocktest.Lock(t, c, name)) // the node indexes are set

	for _, bad := range []string{"-1", "9007199254740992"} {
		setAll(bad)
		if l, err := m.TryLock(redlocktest.OpCtx(t, 5*time.Second)); !errors.Is(err, redlock.ErrBadCounter) {
			t.Errorf("TryLock with every counter at %s = (lease %v, %v), want ErrBadCounter", bad, l != nil, err)
		}
		for i, n := range nodes {
			if got, err := n.Get(ctx, counter).Result(); err != nil || got != bad {
				t.Errorf("node %d: counter after the refusal = %q, %v, want %q untouched", i, got, err, bad)
			}
			if k, err := n.Exists(ctx, lockKey).Result(); err != nil || k != 0 {
				t.Errorf("node %d: lock key after the refusal: EXISTS = %d, %v, want 0", i, k, err)
			}
		}
	}

	const top = uint64(1) << 53
	setAll(strconv.FormatUint(top-uint64(len(nodes)), 10))
	l, err := m.TryLock(redlocktest.OpCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("TryLock with every counter at 2^53-N = %v, want a grant", err)
	}
	if tok := l.Token(); tok <= top-uint64(len(nodes)) || tok > top {
		t.Errorf("token from counters at 2^53-N = %d, want in (2^53-N, 2^53]", tok)
	}
	redlocktest.Release(t, l)
	if l, err := m.TryLock(redlocktest.OpCtx(t, 5*time.Second)); !errors.Is(err, redlock.ErrBadCounter) {
		t.Errorf("TryLock after the counters passed 2^53-N = (lease %v, %v), want ErrBadCounter", l != nil, err)
	}
}

// TestCounterPhase: a node mints the smallest token above its counter
// that is ≡ its index (mod N). A counter out of that phase (set by hand,
// or new) gets there in one grant; from then on each grant adds N.
func TestCounterPhase(t *testing.T) {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	nodes := redlocktest.Clients(t, addrs)
	c := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})
	counter, n := prefix+"counter", int64(len(nodes))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	redlocktest.Release(t, redlocktest.Lock(t, c, "phase")) // the node indexes are set
	read := func() []int64 {
		t.Helper()
		out := make([]int64, len(nodes))
		for i, nd := range nodes {
			v, err := nd.Get(ctx, counter).Int64()
			if err != nil {
				t.Fatalf("node %d: GET %s = %v", i, counter, err)
			}
			out[i] = v
		}
		return out
	}
	for i, nd := range nodes { // 1000+i+1: one past the phase on every node
		if err := nd.Set(ctx, counter, 1000+int64(i)+1, 0).Err(); err != nil {
			t.Fatalf("node %d: SET = %v", i, err)
		}
	}
	redlocktest.Release(t, redlocktest.Lock(t, c, "phase"))
	first := read()
	for i, v := range first {
		if want := 1000 + int64(i) + n; v != want {
			t.Errorf("node %d: counter %d after a grant from %d, want %d (the next ≡ %d mod %d)", i, v, 1000+i+1, want, i, n)
		}
	}
	redlocktest.Release(t, redlocktest.Lock(t, c, "phase"))
	for i, v := range read() {
		if v != first[i]+n {
			t.Errorf("node %d: counter %d after a grant from %d, want %d", i, v, first[i], first[i]+n)
		}
	}
}
