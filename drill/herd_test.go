package drill_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/batontest/zkframes"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
)

// TestRow09Herd: 500 waiters, each with its own session, queue on one
// name and hold it ~5 ms each. Each acquires exactly once, tokens
// increase, grants come in queue order (I10), nothing overlaps at the
// resource (I1), and the server requests per handoff at 500 waiters stay
// within 1.1× those at 5: a release wakes one waiter, not the herd
// (ZooKeeper's documented herd effect; etcd's concurrency.Mutex also waits
// only on its predecessor).
func TestRow09Herd(t *testing.T) {
	if testing.Short() {
		testenv.Unavailable(t, "500 sessions: not with -short")
	}
	forEachEngine(t, func(t *testing.T, e *engine) {
		if e.family == leaseFamily {
			herdLeaseRow(t, e)
			return
		}
		seed := drilltest.BaseSeed()
		var small, perLarge float64
		large := herdSize()
		for i, n := range []int{5, 5, 5, 5, large} {
			per := herd(t, e, seed+uint64(i), n)
			if n == 5 {
				small += per / 4
			} else {
				perLarge = per
			}
		}
		t.Logf("%s: %.2f requests per handoff at 5 waiters, %.2f at %d", e.name, small, perLarge, large)
		if perLarge > 1.1*small {
			t.Errorf("%s: %.2f server requests per handoff at %d waiters, want ≤ 1.1 × %.2f (at 5): a release wakes more than one waiter", e.name, perLarge, large, small)
		}
	})
}

// herdSize is the large round's number of waiters: 500 in the long drill
// (BATON_DRILL_TRIALS set, as scripts/drill.sh does) or with
// BATON_DRILL_HERD=n; 100 by default, because 500 sessions with the race
// detector on two shared cores spend more time starving than queueing.
func herdSize() int {
	if n, err := strconv.Atoi(os.Getenv("BATON_DRILL_HERD")); err == nil && n > 0 {
		return n
	}
	if drilltest.Trials(0) > 0 {
		return 500
	}
	return 100
}

// herdTTL is row 9's session timeout and lease TTL. Hundreds of sessions
// with a 1.5–2 s timeout on two loaded cores under -race lose sessions to
// scheduling delays alone; expiry is not what this row tests, so the plug
// and the waiters get a long timeout on every engine. A plug with the
// drills' short TTL is Lost in the waiters' enqueue burst (the embedded
// etcd answers keepalives "waiting for the applied index took too long";
// a SQL server busy with a hundred waiters' attempts answers a renewal
// late); its entry goes, and the queue never reaches n+1 entries.
const herdTTL = 20 * time.Second

// herd runs one round with n waiters behind a plug holder and returns the
// waiters' server requests per handoff (pings and keepalives excluded).
func herd(t *testing.T, e *engine, seed uint64, n int) float64 {
	run := drilltest.Start(t, seed)
	name := lockName("row09", e, seed)
	res := newCounters(t, run)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }() // a failed trial stops its waiters
	plug := newHolder(t, run, e, "plug", name, clientOpts{ttl: herdTTL})
	lp, err := plug.lock(ctx)
	if err != nil {
		t.Fatalf("plug's Lock = %v", err)
	}

	var count func() int64
	o := clientOpts{ttl: herdTTL}
	switch e.name {
	case "zk":
		cp := zkframes.Start(t, testenv.ZK(t))
		o.upstream, count = cp.Addr, cp.Requests
	case "etcd":
		var rc rpcCounter
		o.etcdCli = rawEtcd(t, etcdServer.Endpoint, grpc.WithChainUnaryInterceptor(rc.unary), grpc.WithChainStreamInterceptor(rc.stream))
		count = rc.n.Load
	}
	ws := make([]*holder, n)
	for i := range ws {
		ws[i] = newHolder(t, run, e, "w"+strconv.Itoa(i), name, o)
	}
	mntr0 := zkPackets(t, e)
	before := count()
	for _, w := range ws {
		wg.Go(func() { // owner: this test (wg)
			l, err := w.lock(ctx)
			if err != nil {
				t.Errorf("%s's Lock = %v", w.id, err)
				return
			}
			hold := time.After(5 * time.Millisecond)
			if ferr, uerr := res.increment(ctx, run, w.id, l.Token(), l.Owner()); ferr != nil || uerr != nil {
				t.Errorf("%s's increment = %v, %v", w.id, ferr, uerr)
			}
			<-hold
			if err := w.release(ctx, l); err != nil {
				t.Errorf("%s's Release = %v", w.id, err)
			}
		})
	}
	waitEntries(t, e, name, n+1)
	waitWatches(t, run, name, ws)
	_ = plug.release(ctx, lp)
	wg.Wait()
	requests := count() - before
	if mntr0 >= 0 {
		t.Logf("mntr zk_packets_received grew by %d (includes pings of every session and other tests' traffic)", zkPackets(t, e)-mntr0)
	}

	events := run.Rec.Events()
	grants := map[string]int{}
	for _, g := range drill.Grants(events, name) {
		grants[g.Client]++
	}
	for _, w := range ws {
		if grants[w.id] != 1 {
			t.Errorf("%s acquired %d times, want exactly once", w.id, grants[w.id])
		}
	}
	run.Report(drill.CheckTokens(events))
	run.Report(drill.CheckExclusive(events))
	run.Report(drill.CheckFIFO(events))
	run.Report(drill.CheckWakeups(events, name, 1))
	res.check(t, run, false)
	run.Report(drill.Orphans(ctx, name, time.Second, e.scan))
	return float64(requests) / float64(n)
}

// waitWatches waits, before the plug is pulled, until every waiter has
// recorded a watch. A waiter's entry appears before its watch, so waiting
// for entries alone let a slow waiter list only after the waiters ahead of
// it had come and gone; it was then head and rightly watched nothing. Every
// waiter queued behind the plug must watch: one that never records a watch
// means the recorder (the BeforeWatch hook in its acquire context) did not
// run, and CheckWakeups judged nothing.
func waitWatches(t *testing.T, run *drilltest.Run, name string, ws []*holder) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		watched := map[string]bool{}
		for _, ev := range run.Rec.Events() {
			if ev.Op == drill.OpWatch && ev.Name == name {
				watched[ev.Client] = true
			}
		}
		var missing []string
		for _, w := range ws {
			if !watched[w.id] {
				missing = append(missing, w.id)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters (%s, …) registered no watch while queued behind the plug: the watch recorder did not run", len(missing), missing[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rpcCounter counts etcd client requests: unary calls and messages sent on
// streams (watch creations, …), except lease keepalives, which are the
// sessions' heartbeat and not the recipe's work.
type rpcCounter struct{ n atomic.Int64 }

const keepAliveMethod = "/etcdserverpb.Lease/LeaseKeepAlive"

func (rc *rpcCounter) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	rc.n.Add(1)
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (rc *rpcCounter) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || method == keepAliveMethod {
		return s, err
	}
	return &countedStream{ClientStream: s, n: &rc.n}, nil
}

type countedStream struct {
	grpc.ClientStream
	n *atomic.Int64
}

func (s *countedStream) SendMsg(m any) error {
	s.n.Add(1)
	return s.ClientStream.SendMsg(m)
}

// zkPackets reads zk_packets_received from ZooKeeper's mntr (4lw), or -1
// for other engines or when mntr cannot be read.
func zkPackets(t *testing.T, e *engine) int64 {
	if e.name != "zk" {
		return -1
	}
	c, err := net.DialTimeout("tcp", e.endpoint, 2*time.Second)
	if err != nil {
		return -1
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("mntr")); err != nil {
		return -1
	}
	b, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, io.EOF) {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "zk_packets_received\t"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return -1
}
