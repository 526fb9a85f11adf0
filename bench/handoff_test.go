package bench_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit/drillhook"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/zklock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// held is a granted lock as the harness sees it (*baton.Lease is one).
type held interface {
	Release(ctx context.Context) error
	Token() uint64
}

// arrivalGap spaces the starts of contenders without a queued signal.
const arrivalGap = 2 * time.Millisecond

// contender is one client queued on the handoff name, on a session of its
// own. queued returns once a Lock call started by the harness has its
// entry in the queue and is about to watch; reset drops a stale signal.
type contender struct {
	lock   func(ctx context.Context) (held, error)
	queued func(ctx context.Context) error
	reset  func()
}

// handoffRig is n+1 contenders on one name (a holder and n waiters) and
// the server request counter.
type handoffRig struct {
	engine      string
	contenders  []*contender
	requests    func() (int64, error)
	breakdown   func() map[string]int64 // etcd: per method
	sessionNote string
	// unordered: the engine has no queue (the lease engines): any waiter
	// may be granted, and a contender without a queued signal counts as
	// waiting requeue after its Lock started.
	unordered bool
	requeue   time.Duration
}

// batonContender wraps a baton mutex; the recipe's BeforeWatch hook,
// carried in each Lock's context, tells when it has queued.
func batonContender() (*contender, func(locker)) {
	parked := make(chan struct{}, 1)
	c := &contender{
		queued: func(ctx context.Context) error {
			select {
			case <-parked:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
		reset: func() {
			select {
			case <-parked:
			default:
			}
		},
	}
	hooks := &drillhook.Hooks{BeforeWatch: func(string) {
		select {
		case parked <- struct{}{}:
		default:
		}
	}}
	set := func(m locker) {
		c.lock = func(ctx context.Context) (held, error) {
			l, err := m.Lock(drillhook.With(ctx, hooks))
			if err != nil {
				return nil, err
			}
			return l, nil
		}
	}
	return c, set
}

// zkHandoffTimeout makes go-zookeeper ping every 5 s (a third of it); the
// measurement windows are exactly that long, so each window holds one ping
// per session whatever the sessions' phases.
const zkHandoffTimeout = 15 * time.Second

func zkPingPeriod() time.Duration { return zkHandoffTimeout / 3 }

// newZKHandoffRig dials n+1 zklock clients, one ZooKeeper session each.
func newZKHandoffRig(tb testing.TB, n int) *handoffRig {
	tb.Helper()
	addr := zkAddr(tb)
	name := benchName(fmt.Sprintf("zk-handoff-%d", n))
	r := &handoffRig{engine: "zk", requests: func() (int64, error) { return zkPackets(addr) },
		sessionNote: fmt.Sprintf("%d zklock clients, one session each", n+1)}
	clients := make([]*baton.Client, n+1)
	r.contenders = make([]*contender, n+1)
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16) // dial 16 at a time
	sets := make([]func(locker), n+1)
	for i := range clients {
		c, set := batonContender()
		r.contenders[i], sets[i] = c, set
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			clients[i], errs[i] = zklock.Dial(ctx, []string{addr}, zklock.Options{SessionTimeout: zkHandoffTimeout})
		})
	}
	wg.Wait()
	tb.Cleanup(func() { closeAll(clients) })
	if err := errors.Join(errs...); err != nil {
		tb.Fatalf("zklock.Dial(%q) = %v", addr, err)
	}
	for i, cl := range clients {
		m, err := cl.Mutex(name)
		if err != nil {
			tb.Fatalf("Mutex(%q) = %v", name, err)
		}
		sets[i](m)
	}
	return r
}

// closeAll closes clients in parallel (each close ends a session).
func closeAll[C interface{ Close() error }](clients []C) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, c := range clients {
		if any(c) == nil {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_ = c.Close()
		})
	}
	wg.Wait()
}

// newEtcdHandoffRig makes n+1 etcdlock clients on one shared, counted
// clientv3.Client: each etcdlock client grants its own lease, so each
// contender is on a session of its own, while 500 gRPC connections are
// spared.
func newEtcdHandoffRig(tb testing.TB, n int) *handoffRig {
	tb.Helper()
	rc := newRPCCounter()
	cli := etcdClient(tb, rc)
	name := benchName(fmt.Sprintf("etcd-handoff-%d", n))
	r := &handoffRig{engine: "etcd", requests: func() (int64, error) { return rc.requests(), nil },
		breakdown:   rc.snapshot,
		sessionNote: fmt.Sprintf("%d etcdlock clients (one lease each) on one shared clientv3.Client", n+1)}
	clients := make([]*baton.Client, 0, n+1)
	tb.Cleanup(func() { closeAll(clients) })
	for range n + 1 {
		c, set := batonContender()
		ec, err := etcdlock.New(cli, etcdlock.Options{TTL: etcdTTL})
		if err != nil {
			tb.Fatalf("etcdlock.New = %v", err)
		}
		clients = append(clients, ec)
		m, err := ec.Mutex(name)
		if err != nil {
			tb.Fatalf("Mutex(%q) = %v", name, err)
		}
		set(m)
		r.contenders = append(r.contenders, c)
	}
	return r
}

// peerHeld is a concurrency.Mutex grant; its token is the revision the
// grant was read at, which grows across grants.
type peerHeld struct {
	m   *concurrency.Mutex
	rev int64
}

func (p peerHeld) Release(ctx context.Context) error { return p.m.Unlock(ctx) }
func (p peerHeld) Token() uint64                     { return uint64(p.rev) }

// newEtcdPeerHandoffRig is the reference for the etcd figures:
// concurrency.Mutex with n+1 sessions (leases) on one shared, counted
// client. It has no hook, so a contender counts as queued once its key
// exists (polled on a second, uncounted client) plus a few milliseconds
// for its watch.
func newEtcdPeerHandoffRig(tb testing.TB, n int) *handoffRig {
	tb.Helper()
	rc := newRPCCounter()
	cli := etcdClient(tb, rc)
	poll := etcdClient(tb, nil)
	pfx := benchName(fmt.Sprintf("etcd-peer-handoff-%d", n))
	r := &handoffRig{engine: "etcd-peer", requests: func() (int64, error) { return rc.requests(), nil },
		breakdown:   rc.snapshot,
		sessionNote: fmt.Sprintf("concurrency.Mutex reference: %d sessions on one shared clientv3.Client", n+1)}
	for range n + 1 {
		sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int(etcdTTL/time.Second)))
		if err != nil {
			tb.Fatalf("concurrency.NewSession = %v", err)
		}
		tb.Cleanup(func() { sess.Close() })
		m := concurrency.NewMutex(sess, pfx)
		key := fmt.Sprintf("%s/%x", pfx, sess.Lease())
		r.contenders = append(r.contenders, &contender{
			lock: func(ctx context.Context) (held, error) {
				if err := m.Lock(ctx); err != nil {
					return nil, err
				}
				return peerHeld{m: m, rev: m.Header().Revision}, nil
			},
			queued: func(ctx context.Context) error {
				for {
					resp, err := poll.Get(ctx, key, clientv3.WithCountOnly())
					if err != nil {
						return err
					}
					if resp.Count == 1 {
						time.Sleep(3 * time.Millisecond) // its Get and watch follow
						return nil
					}
					time.Sleep(500 * time.Microsecond)
				}
			},
		})
	}
	return r
}

// handoffResult is one handoff measurement.
type handoffResult struct {
	engine    string
	waiters   int
	handoffs  int
	latencies []time.Duration // release start → next Lock returns
	releases  []time.Duration // release start → Release returns
	requests  int64           // during the handoff window
	idle      int64           // during an idle window of the same length (pings)
	took      time.Duration   // the handoff window's length
	// rest is the requests during a window of restFor after the handoffs,
	// the holder holding and every waiter waiting (handoffConfig.rest).
	rest      int64
	restFor   time.Duration
	breakdown map[string]int64
	// mem is the process's allocations over the handoffs (Release, the
	// next Lock's return, the re-queue), read once before the first and
	// once after the last.
	mem memCount
}

func (h handoffResult) perHandoff() float64 {
	return float64(h.requests-h.idle) / float64(h.handoffs)
}

// restPerSec is the requests per second at rest after the handoffs (NaN
// when no rest window was measured).
func (h handoffResult) restPerSec() float64 {
	if h.restFor <= 0 {
		return math.NaN()
	}
	return float64(h.rest) / h.restFor.Seconds()
}

func (h handoffResult) quantile(q float64) time.Duration { return quantile(h.latencies, q) }

// allocsPerHandoff is the whole process's heap allocations per handoff:
// every contender's client, holder and waiters, and their background work.
func (h handoffResult) allocsPerHandoff() float64 {
	a, _ := h.mem.perOp(memCount{}, h.handoffs)
	return a
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// errHandoffRule marks a handoff that broke a rule (a grant out of queue
// order, to a contender that was not waiting, or a token that did not
// grow), as opposed to an operation that failed.
var errHandoffRule = errors.New("handoff rule broken")

// grant is a contender's Lock returning.
type grant struct {
	i  int
	at time.Time
	l  held
}

// handoffConfig bounds a run: handoffs stop after max (when > 0) or when
// the window is nearly over; the request count covers exactly window when
// it is set (ZooKeeper: one ping period), else just the handoffs.
type handoffConfig struct {
	window time.Duration
	max    int
	settle time.Duration // pause after each re-queue, so handoffs do not overlap
	budget time.Duration // when > 0, handoffs stop after this long
	// rest, when > 0, is a window after the handoffs in which the holder
	// holds and the waiters wait; its requests are the waiters' traffic
	// at rest (polls, intents kept alive).
	rest time.Duration
}

// runHandoff queues every contender behind contender 0, then repeatedly
// releases the current holder and times how long the next one's Lock takes
// to return. The released contender queues again at the back, so the
// queue stays n long; the next release waits until it has parked. It
// checks that grants follow the queue order and that tokens increase.
func runHandoff(r *handoffRig, cfg handoffConfig) (res handoffResult, err error) {
	n := len(r.contenders) - 1
	res = handoffResult{engine: r.engine, waiters: n}
	ctx, cancel := context.WithCancel(context.Background())
	stop := make(chan struct{})
	grants := make(chan grant)
	failed := make(chan error, len(r.contenders))
	again := make([]chan struct{}, len(r.contenders))
	var wg sync.WaitGroup
	var cur grant
	defer func() {
		close(stop)
		cancel()
		wg.Wait()
		if cur.l != nil {
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer rcancel()
			if rerr := cur.l.Release(rctx); rerr != nil && err == nil {
				err = fmt.Errorf("final Release = %v", rerr)
			}
		}
	}()
	for i, c := range r.contenders {
		again[i] = make(chan struct{}, 1)
		wg.Go(func() { // owner: runHandoff; ends at stop
			for {
				select {
				case <-again[i]:
				case <-stop:
					return
				}
				l, err := c.lock(ctx)
				if err != nil {
					if ctx.Err() == nil {
						failed <- fmt.Errorf("contender %d: Lock = %w", i, err)
					}
					return
				}
				select {
				case grants <- grant{i: i, at: time.Now(), l: l}:
				case <-stop:
					rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
					_ = l.Release(rctx)
					rcancel()
					return
				}
			}
		})
	}
	const timeout = 30 * time.Second
	nextGrant := func() (grant, error) {
		select {
		case g := <-grants:
			return g, nil
		case err := <-failed:
			return grant{}, err
		case <-time.After(timeout):
			return grant{}, fmt.Errorf("no grant within %v", timeout)
		}
	}
	enqueue := func(i int) error {
		c := r.contenders[i]
		if c.reset != nil {
			c.reset()
		}
		again[i] <- struct{}{}
		if c.queued == nil {
			time.Sleep(r.requeue)
			return nil
		}
		qctx, qcancel := context.WithTimeout(ctx, timeout)
		defer qcancel()
		errc := make(chan error, 1)
		go func() { errc <- c.queued(qctx) }() // ends with qctx at the latest
		select {
		case err := <-errc:
			if err != nil {
				return fmt.Errorf("contender %d did not queue: %w", i, err)
			}
			return nil
		case err := <-failed:
			return err
		}
	}

	again[0] <- struct{}{}
	if cur, err = nextGrant(); err != nil {
		return res, err
	}
	queued := make([]int, 0, n)
	for i := 1; i <= n; i++ {
		if r.contenders[i].queued == nil {
			// Started two milliseconds apart, then left to settle: 2000
			// clients started in one instant (each verifying, attempting,
			// recording its intent and subscribing) overloaded this
			// host's five Redlock nodes and the process itself, and the
			// point measured that start, not the handoffs.
			again[i] <- struct{}{}
			time.Sleep(arrivalGap)
		} else if err := enqueue(i); err != nil {
			return res, err
		}
		queued = append(queued, i)
	}
	if n > 0 && r.contenders[1].queued == nil {
		time.Sleep(r.requeue + time.Duration(n)*time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the last watch is registered

	if cfg.window > 0 {
		// Idle baseline: the same sessions, the same length of time, no
		// lock traffic.
		p0, err := r.requests()
		if err != nil {
			return res, err
		}
		time.Sleep(cfg.window)
		p1, err := r.requests()
		if err != nil {
			return res, err
		}
		res.idle = p1 - p0
	}
	var before map[string]int64
	if r.breakdown != nil {
		before = r.breakdown()
	}
	start := time.Now()
	p0, err := r.requests()
	if err != nil {
		return res, err
	}
	m0 := readMem()
	for {
		if cfg.max > 0 && res.handoffs >= cfg.max {
			break
		}
		if cfg.window > 0 && time.Since(start) > cfg.window-300*time.Millisecond {
			break
		}
		if cfg.budget > 0 && time.Since(start) > cfg.budget {
			break
		}
		prev := cur
		t0 := time.Now()
		if err := prev.l.Release(ctx); err != nil {
			return res, fmt.Errorf("Release by contender %d = %v", prev.i, err)
		}
		released := time.Since(t0)
		g, err := nextGrant()
		if err != nil {
			return res, err
		}
		cur = g
		at := slices.Index(queued, g.i)
		switch {
		case at < 0:
			return res, fmt.Errorf("%w: handoff %d granted contender %d, which was not waiting", errHandoffRule, res.handoffs, g.i)
		case at != 0 && !r.unordered:
			return res, fmt.Errorf("%w: handoff %d granted contender %d, want %d (queue order)", errHandoffRule, res.handoffs, g.i, queued[0])
		}
		if g.l.Token() <= prev.l.Token() {
			return res, fmt.Errorf("%w: handoff %d: token %d after %d, want increasing", errHandoffRule, res.handoffs, g.l.Token(), prev.l.Token())
		}
		res.latencies = append(res.latencies, g.at.Sub(t0))
		res.releases = append(res.releases, released)
		res.handoffs++
		queued = append(slices.Delete(queued, at, at+1), prev.i)
		if err := enqueue(prev.i); err != nil {
			return res, err
		}
		time.Sleep(cfg.settle)
	}
	m1 := readMem()
	res.mem = memCount{mallocs: m1.mallocs - m0.mallocs, bytes: m1.bytes - m0.bytes}
	if cfg.window > 0 {
		time.Sleep(time.Until(start.Add(cfg.window)))
	}
	p1, err := r.requests()
	if err != nil {
		return res, err
	}
	res.requests, res.took = p1-p0, time.Since(start)
	if cfg.rest > 0 {
		t1 := time.Now()
		time.Sleep(cfg.rest)
		p2, err := r.requests()
		if err != nil {
			return res, err
		}
		res.rest, res.restFor = p2-p1, time.Since(t1)
	}
	if r.breakdown != nil {
		res.breakdown = diff(r.breakdown(), before)
	}
	if res.handoffs == 0 {
		return res, errors.New("no handoff in the window")
	}
	return res, nil
}

func diff(after, before map[string]int64) map[string]int64 {
	out := make(map[string]int64)
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

var handoffMakers = []struct {
	engine string
	make   func(testing.TB, int) *handoffRig
}{{"zk", newZKHandoffRig}, {"etcd", newEtcdHandoffRig}, {"etcd-peer", newEtcdPeerHandoffRig}}

// TestSmokeHandoff runs a few handoffs with two waiters per engine: grants
// must follow the queue, tokens must grow, and the request counters and
// the allocation count must see the traffic.
func TestSmokeHandoff(t *testing.T) {
	for _, hm := range handoffMakers {
		t.Run(hm.engine, func(t *testing.T) {
			r := hm.make(t, 2)
			res, err := runHandoff(r, handoffConfig{max: 4, settle: time.Millisecond})
			if err != nil {
				t.Fatalf("runHandoff(%s, 2 waiters) = %v", hm.engine, err)
			}
			if res.handoffs != 4 || res.requests < 4 {
				t.Errorf("runHandoff(%s) = %d handoffs, %d requests; want 4 handoffs and at least one request each",
					hm.engine, res.handoffs, res.requests)
			}
			if a := res.allocsPerHandoff(); !(a >= 1) || math.IsInf(a, 0) {
				t.Errorf("runHandoff(%s) = %v allocs per handoff, want ≥ 1 (every handoff sends requests)", hm.engine, a)
			}
		})
	}
}

// BenchmarkHandoff times b.N handoffs with 5 and 500 waiters. ns/op is the
// mean handoff latency, p50-ns the median, req/handoff the server requests
// per handoff (for ZooKeeper pings are not subtracted here: TestRatios
// does that), allocs/handoff the whole process's heap allocations per
// handoff.
func BenchmarkHandoff(b *testing.B) {
	for _, hm := range handoffMakers {
		for _, n := range []int{5, 500} {
			b.Run(fmt.Sprintf("%s/waiters=%d", hm.engine, n), func(b *testing.B) {
				r := hm.make(b, n)
				res, err := runHandoff(r, handoffConfig{max: b.N, settle: time.Millisecond})
				if err != nil {
					b.Fatalf("runHandoff = %v", err)
				}
				var sum time.Duration
				for _, l := range res.latencies {
					sum += l
				}
				b.ReportMetric(float64(sum.Nanoseconds())/float64(res.handoffs), "ns/op")
				b.ReportMetric(float64(res.quantile(0.5).Nanoseconds()), "p50-ns")
				b.ReportMetric(res.perHandoff(), "req/handoff")
				b.ReportMetric(res.allocsPerHandoff(), "allocs/handoff")
			})
		}
	}
}
