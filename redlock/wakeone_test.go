package redlock_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/internal/cmdcount"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
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
func (r *wakeRig) client() *baton.Client {
	c, err := redlock.New(r.nodes, r.o)
	if err != nil {
		r.t.Fatalf("redlock.New() = %v", err)
	}
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// wait starts n waiters, each on a client of its own, and returns their
// clients once every node holds want intents.
func (r *wakeRig) wait(n int, want int64) []*baton.Client {
	ctx, cancel := context.WithCancel(context.Background())
	r.t.Cleanup(cancel)
	var cs []*baton.Client
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
	gone := engine.NewOwnerID()
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
	gone := engine.NewOwnerID() + "-0.1" // a second waiter: polls ≥ 2.5s apart
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

// TestWakeOneStaleHead: a grant that one node still lists as a waiter
// (its attempt found another attempt's key there, recorded itself and won
// on the other nodes) removes itself there at its release, so that node
// picks the same next waiter as the others and tells it when it listens
// there. Left first in line, it was picked in the next waiter's place:
// the next waiter, its polls seconds apart, was not told.
func TestWakeOneStaleHead(t *testing.T) {
	r := newWakeRig(t, redlock.Options{TTL: 20 * time.Second, Backoff: baton.Backoff{Base: 5 * time.Second, Max: 5 * time.Second}})
	r.wait(2, 2)
	if strings.Contains(r.first.Owner(), "/") {
		// Its release would strike a waiter nothing lists from every node.
		t.Errorf("an uncontended grant's owner %q has a waiter part", r.first.Owner())
	}
	g1 := r.handoff(r.first, time.Second)
	wid, _, ok := strings.Cut(g1.Owner(), "/")
	if !ok {
		t.Fatalf("a waiting grant's owner %q has no waiter part", g1.Owner())
	}
	next, err := r.direct[0].ZRange(redlocktest.OpCtx(t, 5*time.Second), r.key, 0, -1).Result()
	if err != nil || len(next) != 1 {
		t.Fatalf("waiters on node 0 = %v, %v, want the other waiter alone", next, err)
	}
	listen := listenOf(t, next[0])
	d := r.direct[listen]
	ctx := redlocktest.OpCtx(t, 5*time.Second)
	now, err := d.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ZAdd(ctx, r.key, redis.Z{Score: float64(now.UnixMilli() - 10_000), Member: wid}).Err(); err != nil {
		t.Fatalf("ZADD on node %d = %v", listen, err)
	}
	if err := d.ZAdd(ctx, r.exp, redis.Z{Score: float64(now.UnixMilli() + 10_000), Member: wid}).Err(); err != nil {
		t.Fatalf("ZADD on node %d = %v", listen, err)
	}
	start := time.Now()
	r.handoff(g1, time.Second)
	t.Logf("node %d listing the holder first: the next waiter granted %v after the release", listen, time.Since(start))
}

// listenOf is the node the client of waiter member "<id>-<node>.<n>"
// listens on.
func listenOf(t *testing.T, member string) int {
	client, _, _ := strings.Cut(member, ".")
	l, err := strconv.Atoi(client[strings.LastIndex(client, "-")+1:])
	if err != nil {
		t.Fatalf("waiter %q: no node in its id", member)
	}
	return l
}

// TestUnlockKeepsWaiter: an attempt that took a minority of the nodes
// (their keys were gone) and freed them stays listed there as a waiter,
// as on the nodes that refused it. Its grant there had removed it, so
// those nodes listed it again only at a refusal: never, while every
// attempt found them free.
func TestUnlockKeepsWaiter(t *testing.T) {
	r := newWakeRig(t, redlock.Options{TTL: 20 * time.Second, Backoff: baton.Backoff{Base: 20 * time.Millisecond, Max: 40 * time.Millisecond}})
	c := r.wait(1, 1)[0]
	lockKey := r.o.Prefix + "lock:" + r.name
	for _, d := range r.direct[3:] {
		if err := d.Del(redlocktest.OpCtx(t, 5*time.Second), lockKey).Err(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for raw(c).Stats().Unlocks < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %d unlocks, want two split attempts", raw(c).Stats().Unlocks)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// An attempt in flight may have taken a node and not freed it yet.
	for !r.intents(1) {
		if time.Now().After(deadline) {
			for i, d := range r.direct {
				n, _ := d.ZCard(redlocktest.OpCtx(t, 5*time.Second), r.key).Result()
				t.Logf("node %d: %d waiters", i, n)
			}
			t.Fatalf("after %d unlocks the waiter is not listed on every node", raw(c).Stats().Unlocks)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRefusedAttemptsReleaseNothing: an attempt refused by a majority
// stops before the other nodes answer, and their answers (refusals too)
// are awaited in the background. Those requests used to end with the
// caller's context: one still queued for a pooled connection failed, its
// outcome unknown, so the keeper released the attempt's key on every
// node, and that release (of a waiter's owner) struck the still waiting
// waiter from the nodes' lines. 32 waiters on 20 pooled connections a
// node queue like that.
func TestRefusedAttemptsReleaseNothing(t *testing.T) {
	r := newWakeRig(t, redlock.Options{TTL: 20 * time.Second, Backoff: baton.Backoff{Base: 5 * time.Second, Max: 5 * time.Second}})
	cs := r.wait(32, 32)
	time.Sleep(100 * time.Millisecond) // the late answers are in
	for i, c := range cs {
		if n := raw(c).Stats().Keeper.Releases; n != 0 {
			t.Errorf("waiter %d: %d releases while refused, want 0", i, n)
		}
	}
}

// TestUnansweredRetriesSpaced: a waiter that knows of 30 other waiters and
// whose attempts a majority of the nodes stops answering (three of five
// blackholed) retries no sooner than its retry floor, not at its backoff
// step: on overloaded nodes, every waiter failing at once and retrying at
// the backoff step multiplied the load that made them fail. With a 50 ms
// backoff and a 100 ms node timeout the old loop attempted about every
// 125 ms (over 30 attempts in 4 s, each an acquire and an unlock of what
// the silent nodes may have granted); spaced by the floor (31 × 25 ms,
// jittered over its upper half) it attempts fewer than ten times.
func TestUnansweredRetriesSpaced(t *testing.T) {
	const ttl = 10 * time.Second
	r := newWakeRig(t, redlock.Options{TTL: ttl, NodeTimeout: 100 * time.Millisecond,
		Backoff: baton.Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}})
	r.wait(30, 30)

	ps := redlocktest.Proxies(t, testenv.Redlock(t))
	nodes := redlocktest.Clients(t, redlocktest.ProxyAddrs(ps))
	count := &cmdcount.Hook{}
	nodes[4].AddHook(count)
	c, err := redlock.New(nodes, r.o)
	if err != nil {
		t.Fatalf("redlock.New() = %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	m := redlocktest.Mutex(t, c, r.name)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { // owner: the test; ends with ctx
		l, err := m.Lock(ctx)
		if err == nil {
			redlocktest.Release(t, l)
		}
		done <- err
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(20 * time.Second)
	for !r.intents(31) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter's intent is not on every node after 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, i := range []int{0, 1, 2} {
		if err := ps[i].Blackhole(""); err != nil {
			t.Fatalf("Blackhole(node %d) = %v", i, err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the attempt in flight ends
	before := count.N()
	const window = 4 * time.Second
	time.Sleep(window)
	sent := count.N() - before
	select {
	case err := <-done:
		t.Fatalf("Lock returned %v within %v of losing a majority, want it still waiting (TTL %v)", err, window, ttl)
	default:
	}
	// An attempt costs node 4 its acquire and, at most, the unlock of
	// what the silent nodes may have granted.
	if sent > 20 {
		t.Errorf("the waiter sent node 4 %d requests in %v with a majority silent, want ≤ 20 (retries spaced by the floor, not the backoff)", sent, window)
	}
	t.Logf("requests to node 4 in %v with nodes 0-2 silent: %d", window, sent)
}
