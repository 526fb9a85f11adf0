package drill_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
	"github.com/baton-go/baton/drill/internal/cluster"
	"github.com/baton-go/baton/etcdlock"
)

// The failover drills' own etcd clusters: clients on base…base+2, peers on
// base+3…base+5, one block per scenario (23821-23844), so that a cluster
// a scenario failed to stop never collides with the next.
const (
	etcdKillBase      = 23821
	etcdPartitionBase = 23827
	etcdQuorumBase    = 23833
	etcdSlowBase      = 23839
)

// storm is the reconnect rate (connections opened per second per client,
// averaged over the failover) above which the drills call it a storm:
// gRPC's backoff (1 s, ×1.6, jittered) opens about one per second per dead
// member.
const storm = 10.0

// startEtcdCluster starts a three-member cluster of the drill's own from
// Debian's etcd-server binary, stopped at cleanup.
func startEtcdCluster(t *testing.T, base int) *cluster.Etcd {
	t.Helper()
	bin := testenv.Binary(t, "etcd")
	dir, err := mkdirShm("baton-etcd-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.StartEtcd(bin, dir, base)
	if err != nil {
		t.Fatalf("StartEtcd: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// clusterEtcdEngine is the etcd engine on a cluster: every lock client
// comes with its clientv3 client (clientOpts.etcdCli, see etcdCli), and
// the orphan scan reads through all members.
func clusterEtcdEngine(t *testing.T, c *cluster.Etcd) *engine {
	e := &engine{name: "etcd-cluster", ttl: etcdTTL, network: true}
	e.open = func(t *testing.T, o clientOpts) *lockClient {
		t.Helper()
		if o.etcdCli == nil {
			t.Fatal("clusterEtcdEngine: clientOpts.etcdCli required")
		}
		lc, err := etcdLockClient(o.etcdCli)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = lc.close() })
		return lc
	}
	scanner, err := etcdlock.New(etcdCli(t, c.Endpoints(0)), etcdlock.Options{TTL: etcdTTL})
	if err != nil {
		t.Fatalf("etcdlock.New = %v", err)
	}
	t.Cleanup(func() { scanner.Close() })
	e.scan = queueEntries(scanner)
	e.owns = func(entry, owner string) bool { return ownEntries(e, []string{entry}, owner) == 1 }
	e.order = func(_ string, token uint64) uint64 { return token }
	return e
}

func etcdLockClient(cli *clientv3.Client) (*lockClient, error) {
	c, err := etcdlock.New(cli, etcdlock.Options{TTL: etcdTTL})
	if err != nil {
		return nil, err
	}
	return &lockClient{mutex: queueMutex(c), recipes: c, entries: queueEntries(c), close: func() error {
		if err := c.Close(); err != nil && !errors.Is(err, baton.ErrClosed) {
			return err
		}
		return nil
	}}, nil
}

// etcdCli returns a clientv3 client of endpoints, closed at cleanup after
// the lock clients on it.
func etcdCli(t *testing.T, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: nopZap})
	if err != nil {
		t.Fatalf("clientv3.New(%v) = %v", endpoints, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestFailoverEtcdLeader: the etcd leader is killed (SIGKILL) or
// partitioned while a client pinned to it holds a lock that 50 waiters
// (on five clients spread over all members) queue for, and a roaming
// client (every member, starting on the leader) holds another.
//
// The partition is made in the peer URLs and the client links: the fault
// proxy every other member reaches the leader's peer port through drops
// both directions, and so does the proxy in front of its client port. What
// the leader sends its peers never arrives (they read it from connections
// they opened), so the followers elect a new leader; the connections the
// old leader opened to its peers still carry their messages to it, so it
// learns the new term and steps down (a one-way partition of its outbound
// raft traffic, as a half-broken NIC or firewall makes).
//
// Expected: the roaming holder is Suspended and comes back Held (or Lost)
// within TTL; waiters whose sessions are lost queue again; the pinned holder, cut from every member that has a
// quorum, is told Lost before anyone else is granted (CheckExclusive);
// tokens strictly increase across the failover; the waiters are served
// in queue order, every one before its deadline; the pinned holder's late
// write, decided before the fault, is refused by the fenced resource and
// lands on the unfenced twin (the negative control goes red); the clients'
// reconnects stay below a storm.
func TestFailoverEtcdLeader(t *testing.T) {
	for _, mode := range []string{"kill", "partition"} {
		t.Run(mode, func(t *testing.T) {
			base := etcdKillBase
			if mode == "partition" {
				base = etcdPartitionBase
			}
			seed := drilltest.BaseSeed()
			for i := range drilltest.Trials(1) {
				t.Run("", func(t *testing.T) { etcdLeaderFault(t, mode, base, seed+uint64(i)) })
			}
		})
	}
}

const (
	failoverWaiters       = 50
	failoverWaiterClients = 5
	waiterDeadline        = 45 * time.Second
)

func etcdLeaderFault(t *testing.T, mode string, base int, seed uint64) {
	c := startEtcdCluster(t, base)
	e := clusterEtcdEngine(t, c)
	run := drilltest.Start(t, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := lockName("failover-"+mode, e, seed)
	leader, err := c.WaitLeader(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	pinned := newHolder(t, run, e, "pinned", name, clientOpts{etcdCli: etcdCli(t, []string{c.Members[leader].Front.Addr})})
	roamer := newHolder(t, run, e, "roamer", name+"-roam", clientOpts{etcdCli: etcdCli(t, c.Endpoints(leader))})
	lp, err := pinned.lock(ctx)
	if err != nil {
		t.Fatalf("pinned Lock = %v", err)
	}
	lr, err := roamer.lock(ctx)
	if err != nil {
		t.Fatalf("roamer Lock = %v", err)
	}
	// The write the pinned holder decides on before the fault.
	fv, ferr := res.fenced.RecordedRead(ctx, run.Rec, "pinned", lp.Token(), lp.Owner())
	uv, uerr := res.unfenced.RecordedRead(ctx, run.Rec, "pinned", lp.Token(), lp.Owner())
	if ferr != nil || uerr != nil {
		t.Fatalf("pinned holder's reads = %v, %v", ferr, uerr)
	}

	ws := startWaiters(t, run, e, c, name, res, failoverWaiters)
	waitEntries(t, e, name, failoverWaiters+1)
	accepts0 := c.Accepts()
	heal := run.Rec.Fault(c.Members[leader].Name, mode+" leader")
	faultAt := drill.Now()
	switch mode {
	case "kill":
		c.Members[leader].Kill()
	case "partition":
		if err := c.Members[leader].PeerLink.Blackhole(""); err != nil {
			t.Fatal(err)
		}
		if err := c.Members[leader].ClientLink.Blackhole(""); err != nil {
			t.Fatal(err)
		}
	}
	next, err := c.WaitLeader(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: new leader %s %v after the fault", mode, c.Members[next].Name, time.Duration(drill.Now()-faultAt).Round(time.Millisecond))

	// The pinned holder is told Lost. The fault lasts 2×TTL (a partition
	// heals then; a killed member stays dead), then the first waiter's
	// grant comes, and after its increment the pinned holder sends its
	// late write.
	select {
	case <-lp.Context().Done():
	case <-time.After(3 * e.ttl):
		t.Fatalf("pinned holder not told Lost within 3×TTL of its member's %s", mode)
	}
	lostAt := drill.Now()
	if rest := 2*e.ttl - time.Duration(drill.Now()-faultAt); rest > 0 {
		time.Sleep(rest)
	}
	if mode == "partition" {
		c.Members[leader].PeerLink.Heal()
		c.Members[leader].ClientLink.Heal()
	}
	heal()
	select {
	case <-ws.first:
	case <-time.After(waiterDeadline):
		t.Fatalf("no waiter served within %v of the fault", waiterDeadline)
	}
	window := time.Duration(drill.Now() - faultAt)
	accepts := c.Accepts() - accepts0
	fwErr := res.fenced.RecordedWrite(ctx, run.Rec, "pinned", lp.Token(), lp.Owner(), fv+1)
	uwErr := res.unfenced.RecordedWrite(ctx, run.Rec, "pinned", lp.Token(), lp.Owner(), uv+1)
	if !drill.IsStale(fwErr) {
		t.Errorf("pinned holder's late fenced write = %v, want refused as stale (I3)", fwErr)
	}
	if uwErr != nil {
		t.Errorf("pinned holder's late unfenced write = %v, want accepted (the negative control)", uwErr)
	}
	heal()
	ws.wait(t)
	if err := roamer.release(ctx, lr); err != nil && !errors.Is(err, baton.ErrLost) {
		t.Errorf("roamer's Release = %v", err)
	}

	events := run.Rec.Events()
	clients := 2 + failoverWaiterClients
	rate := float64(accepts) / float64(clients) / window.Seconds()
	t.Logf("%s: pinned holder Lost %v after the fault; next grant %v after the fault; %d waiter sessions lost and %d acquires failed (re-queued); %d connections opened by %d clients in %v: %.2f/s per client",
		mode, time.Duration(lostAt-faultAt).Round(time.Millisecond), time.Duration(ws.firstAt-faultAt).Round(time.Millisecond),
		ws.lost.Load(), ws.retried.Load(), accepts, clients, window.Round(time.Millisecond), rate)
	if rate > storm {
		t.Errorf("reconnects: %.2f connections/s per client during the failover, want ≤ %v (a storm)", rate, storm)
	}
	checkSuspensions(t, events, faultAt, e.ttl)
	run.Report(drill.CheckExclusive(events))
	run.Report(drill.CheckTokens(events))
	run.Report(drill.CheckFIFO(events))
	res.check(t, run, true)
	run.Report(drill.Orphans(ctx, name, 2*e.ttl, e.scan))
}

// checkSuspensions logs, per holder, how long each suspension after
// since lasted and how it ended, and fails one that lasted past bound
// (Suspended starts at most TTL/2 after the last answered keepalive was
// sent, Lost comes at that send + TTL − margin) or never ended.
func checkSuspensions(t *testing.T, events []drill.Event, since int64, bound time.Duration) {
	t.Helper()
	type key struct {
		client string
		token  uint64
	}
	start := map[key]int64{}
	for _, ev := range events {
		if ev.Op != drill.OpState || ev.T < since {
			continue
		}
		k := key{ev.Client, ev.Token}
		switch ev.Detail {
		case "suspended":
			if _, ok := start[k]; !ok {
				start[k] = ev.T
			}
		default:
			s, ok := start[k]
			if !ok {
				continue
			}
			delete(start, k)
			d := time.Duration(ev.T - s)
			t.Logf("%s (token %d): Suspended for %v, then %s", k.client, k.token, d.Round(time.Millisecond), ev.Detail)
			if d > bound {
				t.Errorf("%s (token %d) Suspended for %v before %s, want ≤ %v", k.client, k.token, d, ev.Detail, bound)
			}
		}
	}
	for k := range start {
		t.Errorf("%s (token %d) still Suspended at the end of the drill", k.client, k.token)
	}
}

// waiters are n queued lock clients on
// failoverWaiterClients clientv3 clients spread over the members; each,
// once granted, increments the counters and releases. A waiter whose
// session is lost queues again until its deadline.
type waiters struct {
	wg      sync.WaitGroup
	first   chan struct{} // closed after the first grant's increment
	once    sync.Once
	firstAt int64
	lost    atomic.Int64 // sessions lost while waiting
	retried atomic.Int64 // acquires failed by other errors, retried
	mu      sync.Mutex
	errs    []error
}

func startWaiters(t *testing.T, run *drilltest.Run, e *engine, c *cluster.Etcd, name string, res *counters, n int) *waiters {
	t.Helper()
	ws := &waiters{first: make(chan struct{})}
	var clis []*clientv3.Client
	for k := range failoverWaiterClients {
		clis = append(clis, etcdCli(t, c.Endpoints(k+1)))
	}
	for i := range n {
		w := newHolder(t, run, e, fmt.Sprintf("w%02d", i), name, clientOpts{etcdCli: clis[i%len(clis)]})
		ws.wg.Go(func() { ws.serve(run, w, res) }) // owner: ws; ends by its deadline
		// One at a time, so that the queue order is the start order.
		waitEntries(t, e, name, i+2)
	}
	return ws
}

func (ws *waiters) serve(run *drilltest.Run, w *holder, res *counters) {
	ctx, cancel := context.WithTimeout(context.Background(), waiterDeadline)
	defer cancel()
	deadline, _ := ctx.Deadline()
	l, err := w.lock(ctx)
	for err != nil && ctx.Err() == nil {
		// The waiter's session ended (its keepalives went unanswered past
		// its deadline) or its request died with a broken connection: as an
		// application would, it queues again.
		if errors.Is(err, baton.ErrSessionLost) {
			ws.lost.Add(1)
		} else {
			ws.retried.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
		l, err = w.lock(ctx)
	}
	if err != nil {
		if late := time.Since(deadline); late > deadlineSlack {
			ws.fail(fmt.Errorf("%s: Lock returned %v after its deadline (I6): %v", w.id, late, err))
		}
		ws.fail(fmt.Errorf("%s: not granted by its deadline: %v", w.id, err))
		return
	}
	at := drill.Now()
	if ferr, uerr := res.increment(ctx, run, w.id, l.Token(), l.Owner()); ferr != nil || uerr != nil {
		ws.fail(fmt.Errorf("%s: increment = %v, %v", w.id, ferr, uerr))
	}
	ws.once.Do(func() { ws.firstAt = at; close(ws.first) })
	// A lease lost while it worked (its session's keepalives unanswered)
	// ends the release with ErrLost: the grant was served.
	if err := w.release(ctx, l); err != nil && !errors.Is(err, baton.ErrLost) {
		ws.fail(fmt.Errorf("%s: Release = %v", w.id, err))
	}
}

func (ws *waiters) fail(err error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.errs = append(ws.errs, err)
}

// wait waits for every waiter and fails the test with their errors: each
// must be granted before its deadline, and none may return past it.
func (ws *waiters) wait(t *testing.T) {
	t.Helper()
	ws.wg.Wait()
	for _, err := range ws.errs {
		t.Errorf("waiter %v, want granted before its deadline", err)
	}
}

// mkdirShm makes a fresh directory on tmpfs when the machine has one: the
// members fsync every write, and on a loaded shared disk that alone stalls
// them for seconds (the drills test baton, not the disk).
func mkdirShm(pattern string) (string, error) {
	parent := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		parent = "/dev/shm"
	}
	return os.MkdirTemp(parent, pattern)
}

// TestFailoverEtcdQuorumLost: two of the three members are killed for
// 3×TTL, longer than the lease, under three holders (clients spread over
// the members) and five waiters, then restarted. No keepalive can be
// answered without a quorum: every holder must be told Lost, and every
// one before any grant after the quorum returns (the new leader extends
// the leases it finds, so the server frees them later still). An acquire
// with a 1 s deadline made while there is no quorum returns by its
// deadline. A holder's late write, decided before the fault, is refused by
// the fenced resource and lands on the unfenced twin.
func TestFailoverEtcdQuorumLost(t *testing.T) {
	seed := drilltest.BaseSeed()
	for i := range drilltest.Trials(1) {
		t.Run("", func(t *testing.T) { etcdQuorumLost(t, seed+uint64(i)) })
	}
}

func etcdQuorumLost(t *testing.T, seed uint64) {
	c := startEtcdCluster(t, etcdQuorumBase)
	e := clusterEtcdEngine(t, c)
	run := drilltest.Start(t, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := lockName("failover-quorum", e, seed)
	var hs []*holder
	var ls []*baton.Lease
	for k := range 3 {
		h := newHolder(t, run, e, fmt.Sprintf("h%d", k), fmt.Sprintf("%s-%d", name, k), clientOpts{etcdCli: etcdCli(t, c.Endpoints(k))})
		l, err := h.lock(ctx)
		if err != nil {
			t.Fatalf("%s Lock = %v", h.id, err)
		}
		hs, ls = append(hs, h), append(ls, l)
	}
	// h0 holds the counters' lock: the write it decides on before the fault.
	name0, l0 := name+"-0", ls[0]
	fv, ferr := res.fenced.RecordedRead(ctx, run.Rec, "h0", l0.Token(), l0.Owner())
	uv, uerr := res.unfenced.RecordedRead(ctx, run.Rec, "h0", l0.Token(), l0.Owner())
	if ferr != nil || uerr != nil {
		t.Fatalf("h0's reads = %v, %v", ferr, uerr)
	}
	ws := startWaiters(t, run, e, c, name0, res, 5)
	waitEntries(t, e, name0, 6)

	survivor := run.Rand.IntN(3)
	accepts0 := c.Accepts()
	heal := run.Rec.Fault("cluster", fmt.Sprintf("sigkill 2 of 3 members (%s survives)", c.Members[survivor].Name))
	faultAt := drill.Now()
	for i, m := range c.Members {
		if i != survivor {
			m.Kill()
		}
	}
	etcdDeadlineHonoured(t, e, c, name+"-deadline", time.Second)
	for i, l := range ls {
		select {
		case <-l.Context().Done():
		case <-time.After(3 * e.ttl):
			t.Fatalf("h%d not told Lost within 3×TTL without a quorum", i)
		}
	}
	if rest := 3*e.ttl - time.Duration(drill.Now()-faultAt); rest > 0 {
		time.Sleep(rest)
	}
	for i, m := range c.Members {
		if i != survivor {
			if err := m.Start(); err != nil {
				t.Fatal(err)
			}
		}
	}
	heal()
	backAt := drill.Now()
	if _, err := c.WaitLeader(ctx, -1); err != nil {
		t.Fatal(err)
	}
	t.Logf("quorum back: leader %v after the restart", time.Duration(drill.Now()-backAt).Round(time.Millisecond))
	select {
	case <-ws.first:
	case <-time.After(waiterDeadline):
		t.Fatalf("no waiter served within %v of the quorum's return", waiterDeadline)
	}
	accepts := c.Accepts() - accepts0
	window := time.Duration(drill.Now() - faultAt)
	fwErr := res.fenced.RecordedWrite(ctx, run.Rec, "h0", l0.Token(), l0.Owner(), fv+1)
	uwErr := res.unfenced.RecordedWrite(ctx, run.Rec, "h0", l0.Token(), l0.Owner(), uv+1)
	if !drill.IsStale(fwErr) {
		t.Errorf("h0's late fenced write = %v, want refused as stale (I3)", fwErr)
	}
	if uwErr != nil {
		t.Errorf("h0's late unfenced write = %v, want accepted (the negative control)", uwErr)
	}
	ws.wait(t)

	events := run.Rec.Events()
	lastLost := int64(0)
	for _, ev := range events {
		if ev.Op == drill.OpState && ev.Detail == "lost" && ev.Client[0] == 'h' {
			lastLost = max(lastLost, ev.T)
		}
	}
	for _, g := range drill.Grants(events, "") {
		if g.At > faultAt && g.At < lastLost {
			t.Errorf("%s granted %q %v before the last holder was told Lost", g.Client, g.Name, time.Duration(lastLost-g.At))
		}
	}
	clients := 3 + failoverWaiterClients
	rate := float64(accepts) / float64(clients) / window.Seconds()
	t.Logf("quorum lost: holders told Lost by %v after the fault; next grant %v after the quorum's return; %d waiter sessions lost and %d acquires failed (re-queued); %d connections by %d clients in %v: %.2f/s per client",
		time.Duration(lastLost-faultAt).Round(time.Millisecond), time.Duration(ws.firstAt-backAt).Round(time.Millisecond),
		ws.lost.Load(), ws.retried.Load(), accepts, clients, window.Round(time.Millisecond), rate)
	if rate > storm {
		t.Errorf("reconnects: %.2f connections/s per client without a quorum, want ≤ %v (a storm)", rate, storm)
	}
	checkSuspensions(t, events, faultAt, e.ttl)
	run.Report(drill.CheckExclusive(events))
	run.Report(drill.CheckTokens(events))
	run.Report(drill.CheckFIFO(events))
	res.check(t, run, true)
	run.Report(drill.Orphans(ctx, name0, 2*e.ttl, e.scan))
}

// etcdDeadlineHonoured checks I6 while the cluster cannot answer: a fresh
// client's acquire with deadline d returns an error wrapping
// context.DeadlineExceeded within d + deadlineSlack.
func etcdDeadlineHonoured(t *testing.T, e *engine, c *cluster.Etcd, name string, d time.Duration) {
	t.Helper()
	lc := e.open(t, clientOpts{etcdCli: etcdCli(t, c.Endpoints(0))})
	m, err := lc.mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	l, err := m.Lock(ctx)
	took := time.Since(start)
	switch {
	case err == nil:
		_ = l.Release(context.Background())
		t.Errorf("Lock of %q without a quorum = granted, want its %v deadline to run out", name, d)
	case !errors.Is(err, context.DeadlineExceeded):
		t.Errorf("Lock of %q without a quorum = %v, want context.DeadlineExceeded", name, err)
	case took > d+deadlineSlack:
		t.Errorf("Lock of %q with a %v deadline returned after %v, want ≤ %v (I6)", name, d, took, d+deadlineSlack)
	default:
		t.Logf("Lock with a %v deadline without a quorum returned after %v", d, took.Round(time.Millisecond))
	}
}

// TestFailoverEtcdSlowMember: one follower is frozen (SIGSTOP) for 2×TTL
// while a holder whose client starts on it holds, then releases to ten
// waiters (clients spread over the members, some starting on it). The
// two other members keep a quorum, so nothing but latency should change:
// exclusion holds (the unfenced control stays green), tokens increase,
// every waiter is served in order before its deadline.
//
// A keepalive or a release that gRPC's round robin puts on the frozen
// member would wait for it until its deadline; etcdlock hedges the
// keepalive and retries the guarded delete on another member, so no lease
// and no waiter session may be lost (the drill fails on any loss).
func TestFailoverEtcdSlowMember(t *testing.T) {
	seed := drilltest.BaseSeed()
	for i := range drilltest.Trials(1) {
		t.Run("", func(t *testing.T) { etcdSlowMember(t, seed+uint64(i)) })
	}
}

func etcdSlowMember(t *testing.T, seed uint64) {
	c := startEtcdCluster(t, etcdSlowBase)
	e := clusterEtcdEngine(t, c)
	run := drilltest.Start(t, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := lockName("failover-slow", e, seed)
	leader, err := c.WaitLeader(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	slow := (leader + 1 + run.Rand.IntN(2)) % 3
	h := newHolder(t, run, e, "holder", name, clientOpts{etcdCli: etcdCli(t, c.Endpoints(slow))})
	l, err := h.lock(ctx)
	if err != nil {
		t.Fatalf("holder's Lock = %v", err)
	}
	ws := startWaiters(t, run, e, c, name, res, 10)
	waitEntries(t, e, name, 11)
	heal := run.Rec.Fault(c.Members[slow].Name, "sigstop follower")
	faultAt := drill.Now()
	if err := c.Members[slow].Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(e.ttl)
	// The holder commits while it holds, as an application must: a lease
	// lost to the gap below commits nothing.
	if st := l.State(); st == baton.Held {
		if ferr, uerr := res.increment(ctx, run, h.id, l.Token(), l.Owner()); ferr != nil || uerr != nil {
			t.Errorf("holder's increment = %v, %v", ferr, uerr)
		}
	} else {
		t.Logf("holder %v before its commit, TTL after the follower froze: no commit", st)
	}
	if err := h.release(ctx, l); err != nil && !errors.Is(err, baton.ErrLost) {
		t.Errorf("holder's Release with a follower frozen = %v, want nil (or ErrLost: the gap below)", err)
	}
	time.Sleep(e.ttl)
	if err := c.Members[slow].Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	heal()
	ws.wait(t)

	events := run.Rec.Events()
	var lost int
	for _, ev := range events {
		if ev.Op == drill.OpState && ev.Detail == "lost" {
			lost++
		}
	}
	t.Logf("slow member: first grant after the release %v after the fault; %d granted leases lost, %d waiter sessions lost, %d acquires failed",
		time.Duration(ws.firstAt-faultAt).Round(time.Millisecond), lost, ws.lost.Load(), ws.retried.Load())
	// A keepalive routed to the frozen member waits until the lease's
	// deadline; the session's hedged second attempt reaches another member.
	if lost > 0 || ws.lost.Load() > 0 {
		t.Errorf("%d leases and %d waiter sessions lost with two of three members answering, want none", lost, ws.lost.Load())
	}
	checkSuspensions(t, events, faultAt, e.ttl)
	run.Report(drill.CheckExclusive(events))
	run.Report(drill.CheckTokens(events))
	run.Report(drill.CheckFIFO(events))
	res.check(t, run, false)
	run.Report(drill.Orphans(ctx, name, 2*e.ttl, e.scan))
}
