package drill_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
	"github.com/baton-go/baton/drill/internal/cluster"
	"github.com/baton-go/baton/redislock"
)

// sentinelTTL is the lease time of the Sentinel drills' clients: long
// enough that a Sentinel failover (500 ms to call the primary down, then
// agreement and promotion) ends before the old holder's next renewal at
// TTL/3, so the double grant is seen while the old holder still believes
// it holds.
const sentinelTTL = 15 * time.Second

// noAcksTTL is the lease time of the no-acks cell. The double grant is
// only seen while the old holder still believes it holds: the failover
// (kill, promotion, every Sentinel naming the replica) and the new grant
// must end before the old holder's first renewal, TTL/3 after its grant,
// which finds the key gone on the promoted replica and rightly tells it
// Lost first. A failover takes 1–2.5 s, but a Sentinel whose election
// splits the vote tries again only 2 × failover-timeout (6 s) later, so
// sentinelTTL's 5 s left no room for one failed election under load.
// TTL/3 = 10 s does (6 s plus a 2.5 s failover); the old holder's Lost is
// then still checked within the TTL of the double grant.
const noAcksTTL = 30 * time.Second

// startSentinelSet starts a primary and replica on ports[0:2] and three
// Sentinels on sentPorts, the drill's own, stopped at cleanup.
func startSentinelSet(t *testing.T, ports, sentPorts []int) *cluster.Sentinel {
	t.Helper()
	srv, sen := testenv.Binary(t, "redis-server"), testenv.Binary(t, "redis-sentinel")
	dir, err := mkdirShm("baton-sentinel-")
	if err != nil {
		t.Fatal(err)
	}
	s, err := cluster.StartSentinel(srv, sen, dir, "baton-drill", ports, sentPorts)
	if err != nil {
		t.Fatalf("StartSentinel: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// sentinelEngine is the Redis engine through go-redis's failover client
// (redis.NewFailoverClient): each lock client asks the Sentinels for the
// primary and follows a failover. o is every client's redislock options.
func sentinelEngine(t *testing.T, s *cluster.Sentinel, o redislock.Options) *engine {
	e := &engine{name: "redis-sentinel", family: leaseFamily, ttl: o.TTL, network: true,
		owns: func(entry, owner string) bool { return entry == "mutex/holder/"+owner }}
	e.open = func(t *testing.T, co clientOpts) *lockClient {
		t.Helper()
		rdb := failoverRedis(s)
		t.Cleanup(func() { rdb.Close() })
		c, err := redislock.New(rdb, o)
		if err != nil {
			t.Fatalf("redislock.New = %v", err)
		}
		t.Cleanup(func() { c.Close() })
		return &lockClient{lease: true, mutex: lockerOf(c.Mutex), entries: redisScan(c, rdb), close: closeOK(c.Close)}
	}
	return e
}

func failoverRedis(s *cluster.Sentinel) *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: s.Master, SentinelAddrs: s.SentAddrs,
		MaxRetries: -1, ReadTimeout: redisIOTimeout, WriteTimeout: redisIOTimeout,
	})
}

// missGrants makes the replica miss what the primary does next: it is
// frozen (SIGSTOP) and the primary drops its replication link, so the
// bytes already in flight are older than the grant and nothing newer
// reaches it (the primary will be dead before it could reconnect).
func missGrants(t *testing.T, s *cluster.Sentinel, primary *redis.Client) {
	t.Helper()
	if err := s.Servers[1].Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := primary.ClientKillByFilter(context.Background(), "TYPE", "replica").Err(); err != nil {
		t.Fatalf("CLIENT KILL TYPE replica = %v", err)
	}
}

// failover kills the primary, thaws the replica at once (a replica
// unanswering for 500 ms would be down itself, and not promoted) and
// waits until every Sentinel names the replica primary. It returns the
// moment of the kill.
func failover(t *testing.T, run *drilltest.Run, s *cluster.Sentinel) (killedAt int64) {
	t.Helper()
	heal := run.Rec.Fault("primary", "sigkill primary; replica promoted by the Sentinels")
	killedAt = drill.Now()
	s.Servers[0].Kill()
	if err := s.Servers[1].Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitPrimary(ctx, s.Addrs[1]); err != nil {
		t.Fatal(err)
	}
	heal()
	t.Logf("Sentinels promoted the replica %v after the primary's kill", time.Duration(drill.Now()-killedAt).Round(time.Millisecond))
	return killedAt
}

// TestFailoverRedisSentinel: the primary of a Sentinel deployment dies
// right after a grant its replica missed, and the Sentinels promote the
// replica; every client is go-redis's failover client.
//
//   - Without replica acknowledgement (no WAIT), the promoted replica grants
//     the lock again, with its rewound counter: the documented double
//     grant. The checkers see two holders at once (I7) and a token that
//     did not increase (I2). The fenced resource refuses the second
//     holder's writes (its token is not above the first's) and keeps the
//     first holder's; the unfenced twin takes both and loses an update
//     (the negative control goes red). The first holder is told Lost at
//     its next renewal. Then the token floor procedure: a floor above
//     every token handed out (TokenFloor = the fence's highest token)
//     re-bases the rewound counter, and the next grant's token is accepted.
//   - With ReplicaAcks=1 the grant the replica missed fails cleanly
//     (ErrNotReplicated, no key left); a grant the replica acknowledged
//     survives the failover: nobody else is granted, and its holder stays
//     Held on the promoted replica.
func TestFailoverRedisSentinel(t *testing.T) {
	t.Run("no-acks", func(t *testing.T) {
		seed := drilltest.BaseSeed()
		for i := range drilltest.Trials(1) {
			t.Run("", func(t *testing.T) { sentinelNoAcks(t, seed+uint64(i)) })
		}
	})
	t.Run("acks", func(t *testing.T) {
		seed := drilltest.BaseSeed()
		for i := range drilltest.Trials(1) {
			t.Run("", func(t *testing.T) { sentinelAcks(t, seed+uint64(i)) })
		}
	})
}

func sentinelNoAcks(t *testing.T, seed uint64) {
	s := startSentinelSet(t, []int{16411, 16412}, []int{26411, 26412, 26413})
	opts := redislock.Options{TTL: noAcksTTL, Prefix: "drill"}
	e := sentinelEngine(t, s, opts)
	run := drilltest.Start(t, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := lockName("failover-sentinel", e, seed)
	primary := newRedis(s.Addrs[0], 0)
	defer primary.Close()

	old := newHolder(t, run, e, "old", name, clientOpts{})
	missGrants(t, s, primary)
	// Grants the replica misses: the old primary's counter runs ahead of
	// the promoted replica's by all of them.
	for range 4 {
		l, err := old.lock(ctx)
		if err != nil {
			t.Fatalf("old holder's Lock = %v", err)
		}
		if err := old.release(ctx, l); err != nil {
			t.Fatalf("old holder's Release = %v", err)
		}
	}
	lo, err := old.lock(ctx)
	if err != nil {
		t.Fatalf("old holder's Lock = %v", err)
	}
	fv, ferr := res.fenced.RecordedRead(ctx, run.Rec, "old", lo.Token(), lo.Owner())
	uv, uerr := res.unfenced.RecordedRead(ctx, run.Rec, "old", lo.Token(), lo.Owner())
	if ferr != nil || uerr != nil {
		t.Fatalf("old holder's reads = %v, %v", ferr, uerr)
	}
	killedAt := failover(t, run, s)

	nw := newHolder(t, run, e, "new", name, clientOpts{})
	lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
	ln, err := nw.lock(lctx)
	lcancel()
	if err != nil {
		t.Fatalf("new holder's Lock on the promoted replica = %v, want the documented double grant", err)
	}
	grantAt := drill.Now()
	if lo.Context().Err() != nil {
		t.Fatalf("old holder already told Lost (%v) at the new grant, %v after the primary's kill: the failover outlasted its renewal at TTL/3 = %v, so there was no double grant to detect (raise noAcksTTL)",
			context.Cause(lo.Context()), time.Duration(grantAt-killedAt).Round(time.Millisecond), noAcksTTL/3)
	}
	t.Logf("double grant %v after the primary's kill: old token %d (old holder %v), new token %d",
		time.Duration(grantAt-killedAt).Round(time.Millisecond), lo.Token(), lo.State(), ln.Token())
	// The new holder's increment is refused by the fence (its token is not
	// above the old one's); then the old holder writes what it decided.
	if ferr, uerr := res.increment(ctx, run, "new", ln.Token(), ln.Owner()); !drill.IsStale(ferr) || uerr != nil {
		t.Errorf("new holder's increment = %v, %v; want the fence to refuse its rewound token, the twin to accept", ferr, uerr)
	}
	if err := res.fenced.RecordedWrite(ctx, run.Rec, "old", lo.Token(), lo.Owner(), fv+1); err != nil {
		t.Errorf("old holder's fenced write = %v, want accepted (its token is the highest)", err)
	}
	if err := res.unfenced.RecordedWrite(ctx, run.Rec, "old", lo.Token(), lo.Owner(), uv+1); err != nil {
		t.Errorf("old holder's unfenced write = %v, want accepted", err)
	}
	select {
	case <-lo.Context().Done():
		t.Logf("old holder told Lost %v after the double grant", time.Duration(drill.Now()-grantAt).Round(time.Millisecond))
	case <-time.After(noAcksTTL):
		t.Errorf("old holder not told Lost within TTL of the double grant")
	}
	if err := nw.release(ctx, ln); err != nil {
		t.Errorf("new holder's Release = %v", err)
	}

	events := run.Rec.Events()
	excl, toks := drill.CheckExclusive(events), drill.CheckTokens(events)
	if len(excl) == 0 || len(toks) == 0 {
		t.Errorf("checkers on the double grant: exclusion %v, tokens %v; want both to report it (the drill could not fail)", excl, toks)
	}
	for _, v := range append(excl, toks...) {
		t.Logf("detected, as documented: %s", v)
	}
	res.check(t, run, true)

	// The token floor procedure: every later client gets a floor above
	// the highest token the resource accepted.
	floor := lo.Token()
	fe := sentinelEngine(t, s, redislock.Options{TTL: noAcksTTL, Prefix: "drill", TokenFloor: floor})
	rb := newHolder(t, run, fe, "rebased", name, clientOpts{})
	lr, err := rb.lock(ctx)
	if err != nil {
		t.Fatalf("Lock with TokenFloor %d = %v", floor, err)
	}
	raw := lr.Token() - floor
	if lr.Token() <= lo.Token() {
		t.Errorf("token with TokenFloor %d = %d, want above the old holder's %d", floor, lr.Token(), lo.Token())
	}
	if raw > lo.Token() {
		t.Errorf("the promoted counter reads %d, above the old holder's token %d: it was not rewound, the floor was not needed (the drill could not fail)", raw, lo.Token())
	}
	if err := res.fenced.Increment(ctx, run.Rec, "rebased", lr.Token(), lr.Owner()); err != nil {
		t.Errorf("fenced increment with the re-based token %d = %v, want accepted", lr.Token(), err)
	}
	t.Logf("re-based: TokenFloor %d, token %d (counter %d) accepted", floor, lr.Token(), lr.Token()-floor)
	if err := rb.release(ctx, lr); err != nil {
		t.Errorf("re-based Release = %v", err)
	}
}

func sentinelAcks(t *testing.T, seed uint64) {
	s := startSentinelSet(t, []int{16413, 16414}, []int{26414, 26415, 26416})
	// WAIT runs within TTL/4: a short TTL keeps the refused acquire short.
	opts := redislock.Options{TTL: sentinelTTL, Prefix: "drill", ReplicaAcks: 1, ReplicaAckTimeout: 500 * time.Millisecond}
	e := sentinelEngine(t, s, opts)
	run := drilltest.Start(t, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := lockName("failover-sentinel-acks", e, seed)
	primary := newRedis(s.Addrs[0], 0)
	defer primary.Close()

	// The grant the replica cannot acknowledge fails, and leaves no key.
	a := newHolder(t, run, e, "a", name+"-missed", clientOpts{})
	missGrants(t, s, primary)
	start := time.Now()
	if l, err := a.lock(ctx); !errors.Is(err, redislock.ErrNotReplicated) {
		if err == nil {
			_ = l.Release(ctx)
		}
		t.Errorf("Lock with the replica frozen = %v, want %v", err, redislock.ErrNotReplicated)
	} else {
		t.Logf("Lock with the replica frozen failed cleanly after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
	if err := s.Servers[1].Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	rc, err := redislock.New(primary, redislock.Options{Prefix: "drill"})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	m, _ := rc.Mutex(name + "-missed")
	k, ok := baton.As[interface{ Key() string }](m)
	if !ok {
		t.Fatal("As[Key](redis mutex) failed")
	}
	if n, _ := primary.Exists(ctx, k.Key()).Result(); n != 0 {
		t.Errorf("%s exists after the refused acquire, want it released", k.Key())
	}

	// An acknowledged grant survives the failover.
	h := newHolder(t, run, e, "holder", name, clientOpts{})
	deadline := time.Now().Add(10 * time.Second)
	var lh *baton.Lease
	for lh == nil { // the thawed replica reconnects to the primary first
		if lh, err = h.lock(ctx); err != nil && (!errors.Is(err, redislock.ErrNotReplicated) || time.Now().After(deadline)) {
			t.Fatalf("holder's Lock with the replica linked = %v", err)
		}
	}
	if ferr, uerr := res.increment(ctx, run, h.id, lh.Token(), lh.Owner()); ferr != nil || uerr != nil {
		t.Fatalf("holder's increment = %v, %v", ferr, uerr)
	}
	if err := s.Servers[1].Signal(syscall.SIGSTOP); err != nil { // failover() thaws it
		t.Fatal(err)
	}
	killedAt := failover(t, run, s)
	other := newHolder(t, run, e, "other", name, clientOpts{})
	tctx, tcancel := context.WithTimeout(ctx, 2*time.Second)
	if l, err := other.lock(tctx); err == nil {
		t.Errorf("another client granted %q (token %d) on the promoted replica while the acknowledged holder holds it", name, l.Token())
		_ = other.release(ctx, l)
	}
	tcancel()
	// The holder's next renewal (TTL/3 after its grant) reaches the
	// promoted replica, which has its key.
	time.Sleep(sentinelTTL/3 + time.Second)
	if st := lh.State(); st != baton.Held {
		t.Errorf("acknowledged holder %v after the failover, want Held", st)
	}
	if ferr, uerr := res.increment(ctx, run, h.id, lh.Token(), lh.Owner()); ferr != nil || uerr != nil {
		t.Errorf("holder's increment after the failover = %v, %v", ferr, uerr)
	}
	t.Logf("acknowledged holder %v %v after the primary's kill", lh.State(), time.Duration(drill.Now()-killedAt).Round(time.Millisecond))
	if err := h.release(ctx, lh); err != nil {
		t.Errorf("holder's Release = %v", err)
	}
	events := run.Rec.Events()
	run.Report(drill.CheckExclusive(events))
	run.Report(drill.CheckTokens(events))
	res.check(t, run, false)
}
