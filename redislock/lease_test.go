package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/redislock"
)

func uniqueName(test string) string { return "redistest/" + test + "/" + engine.NewOwnerID()[:12] }

// TestKeyLayout checks that every key of a name shares one hash slot with
// its token counter, for names with braces and the escape character.
func TestKeyLayout(t *testing.T) {
	for _, name := range []string{"a", "orders/42", "{x}", "}{", "100%", "%7B", "a{b}c"} {
		e := redislock.EscapeName(name)
		if strings.ContainsAny(e, "{}") || e == "" {
			t.Errorf("EscapeName(%q) = %q, want non-empty without braces", name, e)
		}
		tag := redislock.SlotTag(redislock.SlotOf(e))
		if got, want := redislock.SlotOf(tag), redislock.SlotOf(e); got != want {
			t.Errorf("slot of counter tag %q = %d, want %d (the slot of %q)", tag, got, want, e)
		}
	}
	if a, b := redislock.EscapeName("%7B"), redislock.EscapeName("{"); a == b {
		t.Errorf("EscapeName(%q) = EscapeName(%q) = %q, want distinct", "%7B", "{", a)
	}
	// The CRC16 of Redis Cluster's specification: "123456789" → 0x31C3.
	if got := redislock.SlotOf("123456789"); got != 0x31C3&16383 {
		t.Errorf("SlotOf(%q) = %d, want %d", "123456789", got, 0x31C3&16383)
	}
}

// TestOptions checks validation and defaults.
func TestOptions(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	for _, o := range []redislock.Options{
		{TTL: 100 * time.Millisecond},
		{TTL: 1},
		{TTL: 999 * time.Microsecond},
		{TTL: time.Second + 500*time.Microsecond},
		{TTL: baton.MaxTTL + time.Millisecond},
		{Prefix: "a{b"},
		{BatchSize: -1},
		{ReplicaAcks: -1},
		{TTL: time.Second, ReplicaAckTimeout: time.Second},
		{DriftMargin: time.Hour},
	} {
		if c, err := redislock.New(rdb, o); !errors.Is(err, baton.ErrInvalidOption) {
			if c != nil {
				c.Close()
			}
			t.Errorf("New(%+v) = %v, want an error wrapping %v", o, err, baton.ErrInvalidOption)
		}
	}
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cl.Close()
	if _, err := redislock.New(cl, redislock.Options{ReplicaAcks: 1}); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("New(ClusterClient, ReplicaAcks: 1) = %v, want an error wrapping %v", err, baton.ErrInvalidOption)
	}
	c, err := redislock.New(rdb, redislock.Options{})
	if err != nil {
		t.Fatalf("New(zero Options) = %v", err)
	}
	defer c.Close()
	if rc := rawOf(t, c); rc.TTL() != redislock.DefaultTTL || rc.Prefix() != redislock.DefaultPrefix {
		t.Errorf("zero Options: TTL %v prefix %q, want %v %q", rc.TTL(), rc.Prefix(), redislock.DefaultTTL, redislock.DefaultPrefix)
	}
}

// TestTokensMonotonic takes 1 000 grants over 50 names (one counter per
// hash slot, shared between names) and checks that each name's tokens
// strictly increase.
func TestTokensMonotonic(t *testing.T) {
	rdb := redisClient(t, redisAddr(t))
	prefix := testPrefix(t, rdb)
	c := newClient(t, rdb, redislock.Options{Prefix: prefix})
	names := make([]string, 50)
	for i := range names {
		names[i] = uniqueName(fmt.Sprintf("tokens-%d", i))
	}
	last := make(map[string]uint64)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 125 {
				name := names[(w*125+i)%len(names)]
				m, _ := c.Mutex(name)
				l, err := m.Lock(opCtx(t, 10*time.Second))
				if err != nil {
					errs <- fmt.Errorf("Lock(%q) = %v", name, err)
					return
				}
				mu.Lock()
				if prev := last[name]; l.Token() <= prev {
					errs <- fmt.Errorf("%q: token %d after %d, want strictly increasing", name, l.Token(), prev)
				}
				last[name] = l.Token()
				mu.Unlock()
				if err := l.Release(context.Background()); err != nil {
					errs <- fmt.Errorf("Release(%q) = %v", name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The counters are per slot, not per name: at most 50 here.
	n := 0
	it := rdb.Scan(context.Background(), 0, prefix+":tokens:*", 1000).Iterator()
	for it.Next(context.Background()) {
		n++
	}
	if n == 0 || n > len(names) {
		t.Errorf("%d token counters for %d names, want 1…%d", n, len(names), len(names))
	}

}

// TestTokenFloor: a client with TokenFloor F hands out raw + F, raw being
// the slot counter a client without a floor reads on the same name; the
// counter itself is not raised, and a floor that would overflow uint64
// fails the acquire with baton.ErrInvalidOption and leaves the lock free.
func TestTokenFloor(t *testing.T) {
	rdb := redisClient(t, redisAddr(t))
	prefix := testPrefix(t, rdb)
	plain := newClient(t, rdb, redislock.Options{Prefix: prefix})
	const floor = uint64(1_000_000_000_000)
	floored := newClient(t, rdb, redislock.Options{Prefix: prefix, TokenFloor: floor})
	name := uniqueName("floor")
	var got [3]uint64
	for i, c := range []*baton.Client{plain, floored, plain} {
		l := lock(t, c, name)
		got[i] = l.Token()
		_ = l.Release(context.Background())
	}
	if got[1] != got[0]+1+floor {
		t.Errorf("token with TokenFloor %d after raw token %d = %d, want %d (raw + floor)", floor, got[0], got[1], got[0]+1+floor)
	}
	if got[2] != got[0]+2 {
		t.Errorf("token without a floor after the floored grant = %d, want %d (the counter is not raised)", got[2], got[0]+2)
	}

	over := newClient(t, rdb, redislock.Options{Prefix: prefix, TokenFloor: math.MaxUint64})
	m, _ := over.Mutex(name)
	if l, err := m.TryLock(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("TryLock with TokenFloor MaxUint64 = %v, %v, want an error wrapping %v", l, err, baton.ErrInvalidOption)
	}
	l := lock(t, plain, name) // the refused grant was released
	_ = l.Release(context.Background())
}

// TestStaleReleaseNoop: a lease whose key was taken over (deleted behind
// its back, then granted to another owner) releases nothing of the new
// grant, and neither does a repeated release.
func TestStaleReleaseNoop(t *testing.T) {
	rdb := redisClient(t, redisAddr(t))
	prefix := testPrefix(t, rdb)
	c1 := newClient(t, rdb, redislock.Options{Prefix: prefix, TTL: 10 * time.Second})
	c2 := newClient(t, rdb, redislock.Options{Prefix: prefix})
	name := uniqueName("stale")
	a := lock(t, c1, name)
	m1, _ := c1.Mutex(name)
	if err := rdb.Del(context.Background(), keyOf(t, m1)).Err(); err != nil {
		t.Fatalf("DEL %s = %v", keyOf(t, m1), err)
	}
	m2, _ := c2.Mutex(name)
	b, err := m2.TryLock(opCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("TryLock after the key was deleted = %v, want a lease", err)
	}
	if b.Token() <= a.Token() {
		t.Errorf("second grant's token %d, want > %d", b.Token(), a.Token())
	}
	_ = a.Release(context.Background()) // stale: nil or the loss, never a release of b
	if got, _ := mutexValue(t, rdb, keyOf(t, m2)); got != b.Owner() {
		t.Fatalf("owner after the stale release = %q, want the second grant's %q", got, b.Owner())
	}
	if err := a.Release(context.Background()); err == nil {
		t.Errorf("second Release of the stale lease = nil, want an error")
	}
	if got, _ := mutexValue(t, rdb, keyOf(t, m2)); got != b.Owner() {
		t.Fatalf("owner after a repeated stale release = %q, want %q", got, b.Owner())
	}
	if err := b.Release(context.Background()); err != nil {
		t.Fatalf("Release(second grant) = %v", err)
	}
	if n, _ := rdb.Exists(context.Background(), keyOf(t, m2)).Result(); n != 0 {
		t.Errorf("key after the owner's release: exists, want gone")
	}
}

// TestLostBeforeExpiry cuts a holder off the server and checks that it
// goes Suspended and then Lost while its key is still alive on the
// server: the keeper's deadline is strictly before the server's expiry.
func TestLostBeforeExpiry(t *testing.T) {
	t.Parallel()
	addr := redisAddr(t)
	admin := redisClient(t, addr)
	prefix := testPrefix(t, admin)
	rdb, p := proxied(t, addr)
	c := newClient(t, rdb, redislock.Options{Prefix: prefix})
	name := uniqueName("lost")
	l := lock(t, c, name)
	m, _ := c.Mutex(name)
	time.Sleep(testTTL / 2) // at least one renewal
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole() = %v", err)
	}
	var states []baton.State
	for {
		st, changed := l.Observe()
		states = append(states, st)
		if st.Ended() {
			break
		}
		select {
		case <-changed:
		case <-time.After(2 * testTTL):
			t.Fatalf("lease still %v after the cut, want %v", st, baton.Lost)
		}
	}
	pttl, err := admin.PTTL(context.Background(), keyOf(t, m)).Result()
	if err != nil {
		t.Fatalf("PTTL = %v", err)
	}
	owner, _ := mutexValue(t, admin, keyOf(t, m))
	if pttl <= 0 || owner != l.Owner() {
		t.Errorf("when the lease turned Lost the key had PTTL %v and owner %q, want alive and %q: Lost must come before the server's expiry", pttl, owner, l.Owner())
	}
	if !errors.Is(l.Err(), baton.ErrLost) || !errors.Is(l.Err(), keeper.ErrDeadline) {
		t.Errorf("Err() = %v, want %v and %v", l.Err(), baton.ErrLost, keeper.ErrDeadline)
	}
	if len(states) < 3 || states[1] != baton.Suspended {
		t.Errorf("states %v, want held → suspended → lost", states)
	}
	t.Logf("Lost with %v left on the server", pttl)
}

// TestDeadlineHolds: go-redis does not cut a blocked read at a context
// deadline (ContextTimeoutEnabled is false), yet a baton call must return
// by its deadline; the abandoned attempt is released in the background.
func TestDeadlineHolds(t *testing.T) {
	t.Parallel()
	addr := redisAddr(t)
	admin := redisClient(t, addr)
	prefix := testPrefix(t, admin)
	rdb, p := proxied(t, addr)
	c := newClient(t, rdb, redislock.Options{Prefix: prefix, TTL: 3 * time.Second})
	name := uniqueName("deadline")
	m, _ := c.Mutex(name)
	l := lock(t, c, name)
	_ = l.Release(context.Background())
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole() = %v", err)
	}
	for _, try := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		var err error
		if try {
			_, err = m.TryLock(ctx)
		} else {
			_, err = m.Lock(ctx)
		}
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("acquire (try=%v) on a blackholed server = %v, want an error wrapping %v", try, err, context.DeadlineExceeded)
		}
		if took > 200*time.Millisecond+250*time.Millisecond {
			t.Errorf("acquire (try=%v) returned after %v, want by its 200ms deadline + 250ms", try, took)
		}
	}
	// The negative control: the same client's raw call is held by the
	// socket read, not by the context.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_ = rdb.Ping(ctx).Err()
	took := time.Since(start)
	if took < 200*time.Millisecond+250*time.Millisecond {
		t.Errorf("raw go-redis PING with a 200ms deadline returned after %v: the negative control did not show the trap (ContextTimeoutEnabled off)", took)
	}
	t.Logf("raw go-redis PING with a 200ms deadline returned after %v (its ReadTimeout is %v): the trap baton works around", took, cutTimeout)
}

// TestSemaphoreDisagreement: a client with another N is told.
func TestSemaphoreDisagreement(t *testing.T) {
	rdb := redisClient(t, redisAddr(t))
	prefix := testPrefix(t, rdb)
	c := newClient(t, rdb, redislock.Options{Prefix: prefix})
	name := uniqueName("sem-n")
	s3, _ := c.Semaphore(name, 3)
	s2, _ := c.Semaphore(name, 2)
	var got []leasekit.Disagreement
	on, ok := baton.As[interface {
		OnDisagreement(func(leasekit.Disagreement))
	}](s2)
	if !ok {
		t.Fatal("As[OnDisagreement](semaphore) failed")
	}
	on.OnDisagreement(func(d leasekit.Disagreement) { got = append(got, d) })
	l, err := s3.Acquire(opCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("Acquire(N=3) = %v", err)
	}
	l2, err := s2.Acquire(opCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("Acquire(N=2) = %v", err)
	}
	if len(got) != 1 || got[0].Permits != 3 || got[0].Want != 2 {
		t.Errorf("disagreements reported = %v, want one with Permits 3, Want 2", got)
	}
	_ = l.Release(context.Background())
	_ = l2.Release(context.Background())
	if _, err := c.Semaphore(name, 0); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Semaphore(%q, 0) = %v, want %v", name, err, baton.ErrInvalidOption)
	}
}

// TestManyLeases holds 10 000 leases on one client for more than two
// renewal periods: the goroutine count does not grow with the leases,
// every period costs ceil(10000/BatchSize) pipelines, and none is lost.
func TestManyLeases(t *testing.T) {
	const n, batch = 10000, 500
	rdb := redisClient(t, redisAddr(t))
	prefix := testPrefix(t, rdb)
	ttl := 3 * time.Second
	c := newClient(t, rdb, redislock.Options{Prefix: prefix, TTL: ttl, BatchSize: batch})
	before := runtime.NumGoroutine()
	leases := make([]*baton.Lease, n)
	var wg sync.WaitGroup
	var failed sync.Once
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				m, _ := c.Mutex(fmt.Sprintf("many/%d", i))
				l, err := m.TryLock(opCtx(t, 10*time.Second))
				if err != nil {
					failed.Do(func() { t.Errorf("TryLock(many/%d) = %v", i, err) })
					return
				}
				leases[i] = l
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	during := runtime.NumGoroutine()
	want := uint64((n + batch - 1) / batch)
	// Snapshots between rounds: rounds are TTL/3 (1s) apart, and a
	// round's batches follow each other, though on a loaded host not
	// always within 100ms (a round of 20 took 540ms in CI, and a 100ms
	// lull inside it split a round between two snapshots). A snapshot
	// is taken once the counts stood still for 300ms.
	quiet := func() keeper.Stats {
		last, still := rawOf(t, c).Stats(), 0
		for range 100 {
			time.Sleep(100 * time.Millisecond)
			b := rawOf(t, c).Stats()
			if b.Rounds == last.Rounds && b.RenewBatches == last.RenewBatches {
				if still++; still == 3 {
					return b
				}
				continue
			}
			last, still = b, 0
		}
		t.Fatalf("the keeper never paused for 300ms in 10s: %+v", rawOf(t, c).Stats())
		return keeper.Stats{}
	}
	s0 := quiet()
	time.Sleep(2*ttl/3 + ttl/6) // two renewal periods and a half
	s1 := quiet()
	rounds, batches := s1.Rounds-s0.Rounds, s1.RenewBatches-s0.RenewBatches
	if rounds < 2 {
		t.Errorf("%d renewal rounds in 2.5 periods, want ≥ 2", rounds)
	}
	if rounds > 0 && batches != rounds*want {
		t.Errorf("%d pipelines in %d rounds, want %d per round (ceil(%d/%d))", batches, rounds, want, n, batch)
	}
	if s1.RenewFailures != s0.RenewFailures || s1.Lost != 0 {
		t.Errorf("keeper stats %+v, want no failures and no loss", s1)
	}
	lost := 0
	for _, l := range leases {
		if l.State() != baton.Held {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d leases not Held after 2.5 periods", lost, n)
	}
	if extra := during - before; extra > 20 {
		t.Errorf("%d goroutines more while holding %d leases, want a constant few", extra, n)
	}
	t.Logf("%d leases: +%d goroutines, %d rounds, %d pipelines, last round %v", n, during-before, rounds, batches, s1.LastRound)
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	t.Logf("Close released %d leases in %v", n, time.Since(start))
	left := 0
	it := rdb.Scan(context.Background(), 0, prefix+":{many/*", 1000).Iterator()
	for it.Next(context.Background()) {
		left++
	}
	if left != 0 {
		t.Errorf("%d lock keys left after Close, want 0", left)
	}
}
