package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/cmdcount"
	"github.com/baton-go/baton/internal/redlocktest"
	"github.com/baton-go/baton/internal/testenv"
	"github.com/baton-go/baton/redlock"
)

// wakeRig is a holder and n waiters of one mutex, each on a client of
// its own, all on one set of counted node clients.
type wakeRig struct {
	t      *testing.T
	name   string
	key    string // the waiters' set on every node
	exp    string // their intents' set
	direct []redis.UniversalClient
	count  *cmdcount.Hook
	o      redlock.Options
	nodes  []redis.UniversalClient
	grants chan *baton.Lease
	first  *baton.Lease
}

func newWakeRig(t *testing.T, o redlock.Options) *wakeRig {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	r := &wakeRig{t: t, name: "wake-one", key: prefix + "waiters:wake-one", exp: prefix + "intents:wake-one", direct: redlocktest.Clients(t, addrs),
		count: &cmdcount.Hook{}, o: redlocktest.Options(o, prefix), grants: make(chan *baton.Lease, 64)}
	r.nodes = redlocktest.Clients(t, addrs)
	for _, n := range r.nodes {
		n.AddHook(r.count)
	}
	r.first = r.lockEverywhere()
	return r
}

// lockEverywhere takes the rig's lock with its key on every node: a node
// a grant missed (it answered too late) would grant the waiters' attempts
// there instead of recording them.
func (r *wakeRig) lockEverywhere() *baton.Lease {
	c := r.client()
	lockKey := r.o.Prefix + "lock:" + r.name
	for range 10 {
		l := redlocktest.Lock(r.t, c, r.name)
		everywhere := true
		for _, d := range r.direct {
			n, err := d.Exists(redlocktest.OpCtx(r.t, 5*time.Second), lockKey).Result()
			everywhere = everywhere && err == nil && n == 1
		}
		if everywhere {
			return l
		}
		redlocktest.Release(r.t, l)
	}
	r.t.Fatalf("no grant of %q held its key on every node in 10 tries", r.name)
	return nil
}

// client returns a new client on the rig's counted nodes.
func (r *wakeRig) client() *redlock.Client {
	c, err := redlock.New(r.nodes, r.o)
	if err != nil {
		r.t.Fatalf("redlock.New() = %v", err)
	}
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// wait starts n waiters, each on a client of its own, and returns their
// clients once every node holds want intents.
func (r *wakeRig) wait(n int, want int64) []*redlock.Client {
	ctx, cancel := context.WithCancel(context.Background())
	r.t.Cleanup(cancel)
	var cs []*redlock.Client
	for range n {
		c := r.client()
		cs = append(cs, c)
		m := redlocktest.Mutex(r.t, c, r.name)
		go func() { // owner: the test; ends with ctx
			if l, err := m.Lock(ctx); err == nil {
				r.grants <- l
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for !r.intents(want) || r.subscribed() < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("after 30s: want %d waiters on every node and %d clients subscribed, have %d subscribed", want, n, r.subscribed())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cs
}

// subscribed counts the clients' channels subscribed on the nodes: a
// release publishing to a waiter whose SUBSCRIBE has not landed yet wakes
// nobody, and the lock waits for a poll.
func (r *wakeRig) subscribed() int {
	n := 0
	for i, d := range r.direct {
		chs, err := d.PubSubChannels(redlocktest.OpCtx(r.t, 5*time.Second), r.o.Prefix+"wake:*").Result()
		if err != nil {
			r.t.Fatalf("PUBSUB CHANNELS on node %d = %v", i, err)
		}
		n += len(chs)
	}
	return n
}

// intents reports whether every node holds want waiting intents.
func (r *wakeRig) intents(want int64) bool {
	for i, d := range r.direct {
		got, err := d.ZCard(redlocktest.OpCtx(r.t, 5*time.Second), r.key).Result()
		if err != nil {
			r.t.Fatalf("ZCARD on node %d = %v", i, err)
		}
		if got != want {
			return false
		}
	}
	return true
}

// handoff releases l and returns the next grant.
func (r *wakeRig) handoff(l *baton.Lease, within time.Duration) *baton.Lease {
	r.t.Helper()
	redlocktest.Release(r.t, l)
	select {
	case g := <-r.grants:
		return g
	case <-time.After(within):
		r.t.Fatalf("no grant within %v of a release", within)
	}
	return nil
}

// TestWakeOneFlat: a release wakes one waiter, which takes the lock on
// all nodes, and the requests of a handoff do not grow with the waiters:
// with 8 or 32 waiters whose polls are seconds apart, each handoff costs
// the release and the woken waiter's attempt and write-back, three
// requests a node, and at times one more attempt (and the unlock of what
// it took) when the woken waiter reached a node before that node's
// release: at most five a node. Woken all at once, 32 waiters would cost
// 32 a node; polling at their backoff, they would not hand over in time.
func TestWakeOneFlat(t *testing.T) {
	const handoffs = 6
	per := map[int]float64{}
	for _, n := range []int{8, 32} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			// Polls ≥ 5s apart: PollFloor(n ≥ 8) with Backoff.Max 5s;
			// a split vote retries within Base.
			r := newWakeRig(t, redlock.Options{TTL: 20 * time.Second, Backoff: baton.Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second}})
			r.wait(n, int64(n))
			before := r.count.N()
			l := r.first
			for range handoffs {
				l = r.handoff(l, 2*time.Second)
			}
			got := r.count.N() - before
			per[n] = float64(got) / handoffs
			t.Logf("%d waiters: %d commands for %d handoffs (%.1f each)", n, got, handoffs, per[n])
			if limit := int64(5 * len(r.nodes) * handoffs); got > limit {
				t.Errorf("%d commands for %d handoffs among %d waiters, want ≤ %d", got, handoffs, n, limit)
			}
		})
	}
	// Retries like the one above come and go between runs; a herd would
	// cost four times as much with four times the waiters.
	if len(per) == 2 && per[32] > per[8]*1.5 {
		t.Errorf("commands per handoff %.1f with 32 waiters, %.1f with 8: want flat", per[32], per[8])
	}
}

// TestWakeOneBeforePoll: a waiter whose next poll is ≥ 2.5s away is woken
// by the release, and the release skips an older waiter of a client that
// is gone (no subscriber on its channel) instead of leaving the lock to a
// poll; the gone waiter is removed from every node. Each node holds a
// gone waiter of a client listening on that node, so every node's
// release tries one.
func TestWakeOneBeforePoll(t *testing.T) {
	r := newWakeRig(t, redlock.Options{TTL: 20 * time.Second, Backoff: baton.Backoff{Base: 5 * time.Second, Max: 5 * time.Second}})
	gone := baton.NewOwnerID()
	member := func(i int) string { return fmt.Sprintf("%s-%d.1", gone, i) }
	for i, d := range r.direct {
		ctx := redlocktest.OpCtx(t, 5*time.Second)
		now, err := d.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		// Arrived before the live waiter; its intent is live for 10s.
		if err := d.ZAdd(ctx, r.key, redis.Z{Score: float64(now.UnixMilli() - 10_000), Member: member(i)}).Err(); err != nil {
			t.Fatalf("ZADD on node %d = %v", i, err)
		}
		if err := d.ZAdd(ctx, r.exp, redis.Z{Score: float64(now.UnixMilli() + 10_000), Member: member(i)}).Err(); err != nil {
			t.Fatalf("ZADD on node %d = %v", i, err)
		}
	}
	// Two waiters on every node: the live one polls ≥ 2.5s apart.
	r.wait(1, 2)
	start := time.Now()
	r.handoff(r.first, time.Second)
	t.Logf("woken and granted %v after the release", time.Since(start))
	for i, d := range r.direct {
		for _, k := range []string{r.key, r.exp} {
			score, err := d.ZScore(redlocktest.OpCtx(t, 5*time.Second), k, member(i)).Result()
			if err != redis.Nil {
				t.Errorf("node %d: the gone waiter in %s = %v, %v, want removed", i, k, score, err)
			}
		}
	}
}

// TestWakeOneKeyMissing: a grant whose key never reached the node the
// first waiter listens on (that node answered after the round) still
// wakes it at the release: the node finds the lock free and hands it over
// like the others.
func TestWakeOneKeyMissing(t *testing.T) {
	r := newWakeRig(t, redlock.Options{TTL: 20 * time.Second, Backoff: baton.Backoff{Base: 5 * time.Second, Max: 5 * time.Second}})
	gone := baton.NewOwnerID() + "-0.1" // a second waiter: polls ≥ 2.5s apart
	for i, d := range r.direct {
		ctx := redlocktest.OpCtx(t, 5*time.Second)
		now, err := d.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		// Arrived after the live waiter: never its turn here.
		if err := d.ZAdd(ctx, r.key, redis.Z{Score: float64(now.UnixMilli() + 60_000), Member: gone}).Err(); err != nil {
			t.Fatalf("ZADD on node %d = %v", i, err)
		}
		if err := d.ZAdd(ctx, r.exp, redis.Z{Score: float64(now.UnixMilli() + 20_000), Member: gone}).Err(); err != nil {
			t.Fatalf("ZADD on node %d = %v", i, err)
		}
	}
	w := r.wait(1, 2)[0]
	l := redlock.ListenNode(w)
	if err := r.direct[l].Del(redlocktest.OpCtx(t, 5*time.Second), r.key[:len(r.key)-len("waiters:wake-one")]+"lock:wake-one").Err(); err != nil {
		t.Fatalf("DEL on node %d = %v", l, err)
	}
	start := time.Now()
	r.handoff(r.first, time.Second)
	t.Logf("node %d without the key: woken and granted %v after the release", l, time.Since(start))
}
