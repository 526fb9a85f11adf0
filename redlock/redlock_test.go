package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
)

func TestOptions(t *testing.T) {
	one := []redis.UniversalClient{redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})}
	defer one[0].Close()
	three := []redis.UniversalClient{one[0], one[0], one[0]}
	for _, tc := range []struct {
		name  string
		nodes []redis.UniversalClient
		o     redlock.Options
	}{
		{"one node", one, redlock.Options{}},
		{"nil node", []redis.UniversalClient{one[0], nil, one[0]}, redlock.Options{}},
		{"tiny TTL", three, redlock.Options{TTL: 100 * time.Millisecond}},
		{"TTL 1ns", three, redlock.Options{TTL: 1}},
		{"TTL under 1ms", three, redlock.Options{TTL: 999 * time.Microsecond}},
		{"TTL not whole milliseconds", three, redlock.Options{TTL: time.Second + 500*time.Microsecond}},
		{"TTL above MaxTTL", three, redlock.Options{TTL: baton.MaxTTL + time.Millisecond}},
		{"NodeTimeout above TTL/4", three, redlock.Options{TTL: time.Second, NodeTimeout: 300 * time.Millisecond}},
		{"negative NodeTimeout", three, redlock.Options{NodeTimeout: -1}},
		{"DriftFactor 0.2", three, redlock.Options{DriftFactor: 0.2}},
		{"margins above TTL/2", three, redlock.Options{TTL: time.Second, DriftMargin: 500 * time.Millisecond}},
		{"BatchSize", three, redlock.Options{BatchSize: -1}},
	} {
		c, err := redlock.New(tc.nodes, tc.o)
		if !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("New(%s) = %v, want an error wrapping %v", tc.name, err, baton.ErrInvalidOption)
		}
		if c != nil {
			_ = c.Close()
		}
	}
	c, err := redlock.New(three, redlock.Options{})
	if err != nil {
		t.Fatalf("New(zero Options) = %v, want nil", err)
	}
	defer c.Close()
	if redlock.TTL(c) != redlock.DefaultTTL || redlock.Majority(c) != 2 || redlock.Nodes(c) != 3 {
		t.Errorf("New(zero Options): TTL, Majority, Nodes = %v, %d, %d, want %v, 2, 3", redlock.TTL(c), redlock.Majority(c), redlock.Nodes(c), redlock.DefaultTTL)
	}
	// The keeper's margin includes the Redlock drift (TTL·0.01 + 2ms).
	if got, want := redlock.DriftMargin(c), redlock.DefaultTTL/10+redlock.DefaultTTL/100+redlock.DriftFixed; got != want {
		t.Errorf("DriftMargin() = %v, want %v", got, want)
	}
}

// TestTokensIncrease runs contending clients on one name and checks that
// the quorum tokens strictly increase in grant order and are distinct
// modulo nothing: each is ≡ its minting node (mod 5).
func TestTokensIncrease(t *testing.T) {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	const clients, rounds = 8, 10
	name := "tokens/increase"
	var (
		mu     sync.Mutex
		tokens []uint64
		inside int
		wg     sync.WaitGroup
	)
	ctx := redlocktest.OpCtx(t, 60*time.Second)
	for i := range clients {
		m := redlocktest.Mutex(t, redlocktest.NewClient(t, addrs, prefix, redlock.Options{}), name)
		wg.Go(func() {
			for range rounds {
				l, err := m.Lock(ctx)
				if err != nil {
					t.Errorf("client %d: Lock(%q) = %v, want a lease", i, name, err)
					return
				}
				mu.Lock()
				inside++
				if inside > 1 {
					t.Errorf("client %d granted token %d while another holds %q", i, l.Token(), name)
				}
				tokens = append(tokens, l.Token())
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				redlocktest.Release(t, l)
			}
		})
	}
	wg.Wait()
	if len(tokens) != clients*rounds {
		t.Errorf("%d grants, want %d", len(tokens), clients*rounds)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Errorf("grant %d has token %d after %d, want strictly increasing", i, tokens[i], tokens[i-1])
		}
	}
	t.Logf("%d grants, tokens %v…%v", len(tokens), tokens[0], tokens[len(tokens)-1])
}

// TestEarlyStop checks that an attempt returns as soon as a majority is
// won or has become impossible, instead of waiting for slow nodes (which
// would only eat into the grant's validity), by its duration and the
// requests it sent.
func TestEarlyStop(t *testing.T) {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	const nodeTimeout = 400 * time.Millisecond
	o := redlock.Options{TTL: 4 * time.Second, NodeTimeout: nodeTimeout}
	admin := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})

	t.Run("MajorityWon", func(t *testing.T) {
		// Two nodes blackholed, three answer fast: the grant does not wait
		// for the two, and sends no write-back (the three nodes minted
		// within N of the token).
		c := redlocktest.NewProxied(t, addrs, prefix, o)
		if err := raw(c).Verify(redlocktest.OpCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("Verify() = %v", err)
		}
		c.Blackhole(t, 3, 4)
		before := raw(c).Stats()
		start := time.Now()
		l, err := redlocktest.Mutex(t, c.Client, "early/won").TryLock(redlocktest.OpCtx(t, 5*time.Second))
		took := time.Since(start)
		if err != nil {
			t.Fatalf("TryLock with 3 of 5 nodes = %v, want a lease", err)
		}
		st := raw(c).Stats()
		t.Logf("granted in %v: %d acquire requests, %d write-backs", took.Round(time.Millisecond), st.NodeRequests-before.NodeRequests, st.WriteBacks-before.WriteBacks)
		if took >= nodeTimeout {
			t.Errorf("TryLock with 3 fast nodes took %v, want < NodeTimeout %v (no wait for the blackholed nodes)", took, nodeTimeout)
		}
		if n := st.WriteBacks - before.WriteBacks; n != 0 {
			t.Errorf("write-back requests = %d, want 0 (no granting node lags)", n)
		}
		if es := entries(t, admin, "early/won"); len(es) != 3 {
			t.Errorf("entries while held = %q, want 3 (nodes 0–2)", es)
		}
		redlocktest.Release(t, l)
	})

	t.Run("MajorityImpossibleFast", func(t *testing.T) {
		// Another owner holds three nodes; the other two are blackholed
		// for this client: three "held" answers make a majority impossible
		// at once, without waiting NodeTimeout for the two.
		holder := redlocktest.NewProxied(t, addrs, prefix, o)
		holder.Blackhole(t, 3, 4)
		hl, err := redlocktest.Mutex(t, holder.Client, "early/impossible").TryLock(redlocktest.OpCtx(t, 5*time.Second))
		if err != nil {
			t.Fatalf("holder TryLock on 3 nodes = %v", err)
		}
		c := redlocktest.NewProxied(t, addrs, prefix, o)
		if err := raw(c).Verify(redlocktest.OpCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("Verify() = %v", err)
		}
		c.Blackhole(t, 3, 4)
		before := raw(c).Stats()
		start := time.Now()
		_, err = redlocktest.Mutex(t, c.Client, "early/impossible").TryLock(redlocktest.OpCtx(t, 5*time.Second))
		took := time.Since(start)
		if !errors.Is(err, baton.ErrNotAcquired) {
			t.Errorf("TryLock against 3 held nodes = %v, want %v", err, baton.ErrNotAcquired)
		}
		if took >= nodeTimeout {
			t.Errorf("TryLock against 3 held nodes took %v, want < NodeTimeout %v", took, nodeTimeout)
		}
		if n := raw(c).Stats().WriteBacks - before.WriteBacks; n != 0 {
			t.Errorf("write-back requests after a failed round = %d, want 0", n)
		}
		t.Logf("refused in %v", took.Round(time.Millisecond))
		redlocktest.Release(t, hl)
	})

	t.Run("MajorityDown", func(t *testing.T) {
		// Three nodes blackholed: the round fails once their NodeTimeout
		// passed — not at the 0.8·TTL deadline — and leaves nothing behind.
		c := redlocktest.NewProxied(t, addrs, prefix, o)
		if err := raw(c).Verify(redlocktest.OpCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("Verify() = %v", err)
		}
		c.Blackhole(t, 0, 1, 2)
		before := raw(c).Stats()
		start := time.Now()
		_, err := redlocktest.Mutex(t, c.Client, "early/down").TryLock(redlocktest.OpCtx(t, 5*time.Second))
		took := time.Since(start)
		if !errors.Is(err, baton.ErrUnavailable) {
			t.Errorf("TryLock with 3 of 5 nodes down = %v, want %v", err, baton.ErrUnavailable)
		}
		if took > 3*nodeTimeout {
			t.Errorf("TryLock with 3 of 5 nodes down took %v, want ≈ NodeTimeout %v, well before 0.8·TTL", took, nodeTimeout)
		}
		if n := raw(c).Stats().WriteBacks - before.WriteBacks; n != 0 {
			t.Errorf("write-back requests = %d, want 0", n)
		}
		if es := awaitNoEntries(t, admin, "early/down", 2*time.Second); len(es) != 0 {
			t.Errorf("entries after the failed attempt = %q, want none (unlocked on the reachable nodes)", es)
		}
		t.Logf("failed in %v: %v", took.Round(time.Millisecond), err)

		// Lock (waiting) with a deadline returns by it, nothing left.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start = time.Now()
		_, err = redlocktest.Mutex(t, c.Client, "early/down").Lock(ctx)
		if took := time.Since(start); took > time.Second+250*time.Millisecond {
			t.Errorf("Lock(1s) with 3 of 5 nodes down returned after %v, want ≤ 1.25s", took)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock(1s) with 3 of 5 nodes down = %v, want %v", err, context.DeadlineExceeded)
		}
		c.Heal()
		if es := awaitNoEntries(t, admin, "early/down", 2*time.Second); len(es) != 0 {
			t.Errorf("entries after the failed Lock and the heal = %q, want none", es)
		}
	})
}

// TestMinorityDown checks that a lock still works, renews and releases
// with two of five nodes unreachable for the whole lease.
func TestMinorityDown(t *testing.T) {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	c := redlocktest.NewProxied(t, addrs, prefix, redlock.Options{})
	c.Blackhole(t, 1, 3)
	name := "minority/down"
	l := redlocktest.Lock(t, c.Client, name)
	// Past several renewal rounds (TTL/3) and the key's own TTL.
	time.Sleep(redlocktest.TTL + redlocktest.TTL/2)
	if st := l.State(); st != baton.Held {
		t.Errorf("State() after %v with 2 of 5 nodes down = %v, want %v", redlocktest.TTL+redlocktest.TTL/2, st, baton.Held)
	}
	other := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})
	if l2, err := redlocktest.Mutex(t, other, name).TryLock(redlocktest.OpCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNotAcquired) {
		t.Errorf("another client's TryLock while held on 3 nodes = %v, %v, want %v", l2, err, baton.ErrNotAcquired)
	}
	redlocktest.Release(t, l)
	l2, err := redlocktest.Mutex(t, other, name).TryLock(redlocktest.OpCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("TryLock after release = %v, want a lease", err)
	}
	if l2.Token() <= l.Token() {
		t.Errorf("token after handoff = %d, want > %d", l2.Token(), l.Token())
	}
	redlocktest.Release(t, l2)
}

// TestNodeIndex checks that a client refuses nodes listed in another order
// than the deployment's first client listed them, and a node whose index
// is missing or wrong.
func TestNodeIndex(t *testing.T) {
	addrs := testenv.Redlock(t)
	t.Run("Reordered", func(t *testing.T) {
		prefix := redlocktest.Prefix(t, addrs)
		first := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})
		if err := raw(first).Verify(redlocktest.OpCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("first Verify() = %v, want nil", err)
		}
		swapped := append([]string{addrs[1], addrs[0]}, addrs[2:]...)
		c := redlocktest.NewClient(t, swapped, prefix, redlock.Options{})
		err := raw(c).Verify(redlocktest.OpCtx(t, 5*time.Second))
		if !errors.Is(err, baton.ErrInvalidOption) || !errors.Is(err, redlock.ErrNodeIndex) {
			t.Errorf("Verify() with nodes 0 and 1 swapped = %v, want %v and %v", err, baton.ErrInvalidOption, redlock.ErrNodeIndex)
		}
		if _, err := redlocktest.Mutex(t, c, "index/x").TryLock(redlocktest.OpCtx(t, 5*time.Second)); !errors.Is(err, redlock.ErrNodeIndex) {
			t.Errorf("TryLock on a refused client = %v, want %v", err, redlock.ErrNodeIndex)
		}
		if es := entries(t, first, "index/x"); len(es) != 0 {
			t.Errorf("entries after the refused client's TryLock = %q, want none", es)
		}
	})
	t.Run("WrongIndexFirstUse", func(t *testing.T) {
		// Verification at the first acquire, without Verify.
		prefix := redlocktest.Prefix(t, addrs)
		rdb := redis.NewClient(&redis.Options{Addr: addrs[2]})
		defer rdb.Close()
		if err := rdb.Set(t.Context(), prefix+"index", "4", 0).Err(); err != nil {
			t.Fatalf("SET index = %v", err)
		}
		c := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})
		_, err := redlocktest.Mutex(t, c, "index/y").Lock(redlocktest.OpCtx(t, 5*time.Second))
		if !errors.Is(err, baton.ErrInvalidOption) || !errors.Is(err, redlock.ErrNodeIndex) {
			t.Errorf("Lock with node 2 storing index 4 = %v, want %v and %v", err, baton.ErrInvalidOption, redlock.ErrNodeIndex)
		}
	})
	t.Run("Wiped", func(t *testing.T) {
		// A node this client verified loses its index (as a restart
		// without persistence would): the client refuses that node and
		// keeps working on the other four.
		prefix := redlocktest.Prefix(t, addrs)
		c := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})
		l := redlocktest.Lock(t, c, "index/z")
		redlocktest.Release(t, l)
		rdb := redis.NewClient(&redis.Options{Addr: addrs[0]})
		defer rdb.Close()
		if err := rdb.Del(t.Context(), prefix+"index", prefix+"counter").Err(); err != nil {
			t.Fatalf("DEL index, counter = %v", err)
		}
		// The round stops at the first three grants, so node 0's answer may
		// come too late to be read: a few grants until it is.
		var l2 *baton.Lease
		for i := 0; i < 20 && raw(c).Stats().WipedNodes == 0; i++ {
			if l2 != nil {
				redlocktest.Release(t, l2)
			}
			l2 = redlocktest.Lock(t, c, "index/z")
		}
		if l2.Token() <= l.Token() {
			t.Errorf("token after node 0 was wiped = %d, want > %d", l2.Token(), l.Token())
		}
		if n := raw(c).Stats().WipedNodes; n != 1 {
			t.Fatalf("Stats().WipedNodes = %d after 20 grants, want 1", n)
		}
		redlocktest.Release(t, l2)
		l2 = redlocktest.Lock(t, c, "index/z")
		if es := entries(t, c, "index/z"); len(es) != 4 {
			t.Errorf("entries with node 0 refused = %q, want 4 (nodes 1–4)", es)
		}
		if idx, _ := rdb.Get(t.Context(), prefix+"index").Result(); idx != "" {
			t.Errorf("node 0's index after the known client used it = %q, want still missing (never re-set silently)", idx)
		}
		redlocktest.Release(t, l2)
	})
}

// TestInspect checks the per-node view of a held lock: at once, a majority
// of the nodes show the owner, its own token, the time left and its index
// (the others may not have answered the round yet); from the
// first renewal (TTL/3) on, every node also records the grant's quorum
// token, which the acquire could not know when it created the key.
func TestInspect(t *testing.T) {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	c := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})
	l := redlocktest.Lock(t, c, "inspect/me")
	read := func() []redlock.NodeEntry {
		t.Helper()
		es, err := redlock.Inspect(redlocktest.OpCtx(t, 5*time.Second), c, "inspect/me")
		if err != nil {
			t.Fatalf("Inspect() = %v", err)
		}
		return es
	}
	held := 0
	for _, e := range read() {
		switch {
		case e.Err != nil:
			t.Errorf("node %d: %v", e.Node, e.Err)
		case e.Owner == "":
			// A node the round did not wait for may not have answered yet.
		case e.Owner != l.Owner() || e.Token == 0:
			t.Errorf("node %d: owner %q token %d, want owner %q and a token", e.Node, e.Owner, e.Token, l.Owner())
		case e.Grant != 0:
			t.Errorf("node %d: grant %d before the first renewal, want 0 (no node lags: no write-back)", e.Node, e.Grant)
		case e.TTLLeft <= 0 || e.TTLLeft > redlocktest.TTL:
			t.Errorf("node %d: TTL left %v, want in (0, %v]", e.Node, e.TTLLeft, redlocktest.TTL)
		case e.Index != fmt.Sprint(e.Node) || e.Counter < e.Token:
			t.Errorf("node %d: index %q counter %d, want %d and ≥ %d", e.Node, e.Index, e.Counter, e.Node, e.Token)
		default:
			held++
		}
	}
	if held < redlock.Majority(c) {
		t.Errorf("%d nodes hold the lock, want ≥ %d", held, redlock.Majority(c))
	}
	deadline := time.Now().Add(redlocktest.TTL)
	for {
		written := 0
		for _, e := range read() {
			switch {
			case e.Grant == l.Token():
				written++
			case e.Grant != 0:
				t.Fatalf("node %d: grant %d, want 0 or the lease's token %d", e.Node, e.Grant, l.Token())
			}
		}
		if written == len(addrs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d nodes record the grant's token %d a TTL after the grant, want all (the renewals write it)", written, len(addrs), l.Token())
		}
		time.Sleep(50 * time.Millisecond)
	}
	redlocktest.Release(t, l)
}

// TestCloseDuringWaits closes a client while its waiters keep attempting:
// every Lock returns an error wrapping baton.ErrClosed, and (under -race)
// no attempt's round registers with Close's wait for the node requests
// while that wait runs.
func TestCloseDuringWaits(t *testing.T) {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	holder := redlocktest.NewClient(t, addrs, prefix, redlock.Options{})
	l := redlocktest.Lock(t, holder, "close-during-waits")
	defer redlocktest.Release(t, l)
	for range 5 {
		c, err := redlock.New(redlocktest.Clients(t, addrs), redlocktest.Options(redlock.Options{
			Backoff: baton.Backoff{Base: time.Millisecond, Max: 2 * time.Millisecond}}, prefix))
		if err != nil {
			t.Fatalf("redlock.New() = %v", err)
		}
		errs := make(chan error, 8)
		for range cap(errs) {
			m := redlocktest.Mutex(t, c, "close-during-waits")
			go func() { // owner: the test; ends when Close wakes it
				_, err := m.Lock(context.Background())
				errs <- err
			}()
		}
		time.Sleep(30 * time.Millisecond)
		if err := c.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
		for range cap(errs) {
			select {
			case err := <-errs:
				if !errors.Is(err, baton.ErrClosed) {
					t.Fatalf("Lock() after Close = %v, want an error wrapping baton.ErrClosed", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("a waiter's Lock did not return within 5s of Close")
			}
		}
	}
}
