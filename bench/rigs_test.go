package bench_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/zklock"
	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// pair is one lock implementation measured as lock+unlock on a name of its
// own. lock and unlock are separate so the smoke can look at the server in
// between.
type pair struct {
	impl    string // "baton", "floor" or "peer"
	what    string // what it is, for the report
	lock    func(ctx context.Context) error
	unlock  func(ctx context.Context) error
	entries func(ctx context.Context) (int, error) // entries under its name now
	check   func() error                           // optional: after lock, the grant looks right
	// server is optional: the server's CPU time so far (every client's),
	// where the engine reports it.
	server func(ctx context.Context) (time.Duration, error)
}

// serverCPU is p.server's reading, or 0 when the pair has none.
func (p *pair) serverCPU(ctx context.Context) (time.Duration, error) {
	if p.server == nil {
		return 0, nil
	}
	return p.server(ctx)
}

// run makes n lock+unlock of p, stopping at the first error.
func (p *pair) run(ctx context.Context, n int) error {
	for range n {
		if err := p.lock(ctx); err != nil {
			return fmt.Errorf("%s lock: %w", p.impl, err)
		}
		if err := p.unlock(ctx); err != nil {
			return fmt.Errorf("%s unlock: %w", p.impl, err)
		}
	}
	return nil
}

// rig is one engine's three implementations on one server, plus the
// server-side request counter used for requests per operation.
type rig struct {
	engine string
	pairs  []*pair // baton, floor, peer
	// requests returns a running count of server requests (ZooKeeper:
	// every packet of every client, pings included; etcd: this rig's
	// client, keepalives excluded).
	requests func() (int64, error)
	// breakdown returns per-method counts where available (etcd).
	breakdown func() map[string]int64
}

func (r *rig) pair(impl string) *pair {
	for _, p := range r.pairs {
		if p.impl == impl {
			return p
		}
	}
	panic("no pair " + impl)
}

// benchName makes names unique per run, so leftovers of an earlier run
// never sit in the queue.
func benchName(kind string) string {
	return fmt.Sprintf("baton-bench/%s-%d", kind, time.Now().UnixNano())
}

// zkSessionTimeout is long enough that pings (every third of it) are rare
// next to the requests measured.
const zkSessionTimeout = 10 * time.Second

// newZKRig connects the floor and zk.Lock on one go-zookeeper connection
// and baton on its own client, to the same server.
func newZKRig(tb testing.TB) *rig {
	tb.Helper()
	addr := zkAddr(tb)
	conn, _, err := zk.Connect([]string{addr}, zkSessionTimeout, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		tb.Fatalf("zk.Connect(%q) = %v", addr, err)
	}
	tb.Cleanup(conn.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := zklock.Dial(ctx, []string{addr}, zklock.Options{SessionTimeout: zkSessionTimeout})
	if err != nil {
		tb.Fatalf("zklock.Dial(%q) = %v", addr, err)
	}
	tb.Cleanup(func() { c.Close() })
	acl := zk.WorldACL(zk.PermAll)
	// The floor and zk.Lock get persistent directories made up front; baton
	// makes its own container directory on first use, as in production.
	floorDir, peerDir := "/"+benchName("zk-floor"), "/"+benchName("zk-peer")
	for _, p := range []string{"/baton-bench", floorDir, peerDir} {
		if _, err := conn.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			tb.Fatalf("Create(%q) = %v", p, err)
		}
	}
	tb.Cleanup(func() {
		_ = conn.Delete(floorDir, -1)
		_ = conn.Delete(peerDir, -1)
	})
	count := func(dir string) func(context.Context) (int, error) {
		return func(context.Context) (int, error) {
			kids, _, err := conn.Children(dir)
			if errors.Is(err, zk.ErrNoNode) {
				return 0, nil
			}
			return len(kids), err
		}
	}

	floor := &pair{impl: "floor", what: "create EPHEMERAL_SEQUENTIAL + getChildren + delete", entries: count(floorDir)}
	var node string
	floor.lock = func(context.Context) error {
		p, err := conn.Create(floorDir+"/lock-", nil, zk.FlagEphemeralSequential, acl)
		if err != nil {
			return err
		}
		node = p
		kids, _, err := conn.Children(floorDir)
		if err != nil {
			return err
		}
		slices.SortFunc(kids, func(a, b string) int { return strings.Compare(zkSeq(a), zkSeq(b)) })
		if len(kids) == 0 || floorDir+"/"+kids[0] != p {
			return fmt.Errorf("floor: %s is not first in %v", p, kids)
		}
		return nil
	}
	floor.unlock = func(context.Context) error { return conn.Delete(node, -1) }

	zl := zk.NewLock(conn, peerDir, acl)
	peer := &pair{impl: "peer", what: "go-zookeeper zk.Lock",
		lock:    func(context.Context) error { return zl.Lock() },
		unlock:  func(context.Context) error { return zl.Unlock() },
		entries: count(peerDir)}

	name := benchName("zk-baton")
	m, err := c.Mutex(name)
	if err != nil {
		tb.Fatalf("Mutex(%q) = %v", name, err)
	}
	zc, _ := baton.As[*zklock.Client](c) // the lock's znode directory is ZooKeeper's own
	dir, err := zc.Dir(name)
	if err != nil {
		tb.Fatalf("Dir(%q) = %v", name, err)
	}
	bp := batonPair(m, "zklock Mutex", count(dir))
	return &rig{
		engine:   "zk",
		pairs:    []*pair{bp, floor, peer},
		requests: func() (int64, error) { return zkPackets(addr) },
	}
}

// zkSeq is the 10-digit sequence suffix ZooKeeper appends.
func zkSeq(name string) string {
	if len(name) < 10 {
		return name
	}
	return name[len(name)-10:]
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// locker is what baton's mutexes offer.
type locker interface {
	Lock(ctx context.Context) (*baton.Lease, error)
}

func batonPair(m locker, what string, entries func(context.Context) (int, error)) *pair {
	var l *baton.Lease
	return &pair{
		impl: "baton", what: what, entries: entries,
		lock: func(ctx context.Context) (err error) {
			l, err = m.Lock(ctx)
			return err
		},
		unlock: func(ctx context.Context) error { return l.Release(ctx) },
		check: func() error {
			if st := l.State(); st != baton.Held || l.Token() == 0 {
				return fmt.Errorf("lease %q: state %v token %d, want Held and a token", l.Name(), st, l.Token())
			}
			return nil
		},
	}
}

// etcdTTL keeps keepalives rare; nothing here crashes.
const etcdTTL = 30 * time.Second

// newEtcdRig puts the floor, concurrency.Mutex (on one reused session) and
// baton on one counted clientv3.Client.
func newEtcdRig(tb testing.TB) *rig {
	tb.Helper()
	rc := newRPCCounter()
	cli := etcdClient(tb, rc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	count := func(pfx string) func(context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			resp, err := cli.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return 0, err
			}
			return int(resp.Count), nil
		}
	}

	// The floor: what concurrency.Mutex sends when uncontended, and no
	// more. One transaction creates the key if absent and reads the first
	// key of the prefix; one delete releases.
	lease, err := cli.Grant(ctx, int64(etcdTTL/time.Second))
	if err != nil {
		tb.Fatalf("Grant = %v", err)
	}
	kctx, kcancel := context.WithCancel(context.Background())
	ka, err := cli.KeepAlive(kctx, lease.ID)
	if err != nil {
		kcancel()
		tb.Fatalf("KeepAlive = %v", err)
	}
	go func() { // owner: the rig; ends when kctx is cancelled at cleanup
		for range ka {
		}
	}()
	tb.Cleanup(func() {
		kcancel()
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		_, _ = cli.Revoke(rctx, lease.ID)
	})
	floorPfx := benchName("etcd-floor") + "/"
	floorKey := floorPfx + strconv.FormatInt(int64(lease.ID), 16)
	floor := &pair{impl: "floor", what: "txn(put if absent, get first) + delete", entries: count(floorPfx)}
	floor.lock = func(ctx context.Context) error {
		resp, err := cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(floorKey), "=", 0)).
			Then(clientv3.OpPut(floorKey, "", clientv3.WithLease(lease.ID)), clientv3.OpGet(floorPfx, clientv3.WithFirstCreate()...)).
			Commit()
		if err != nil {
			return err
		}
		kvs := resp.Responses[1].GetResponseRange().GetKvs()
		if !resp.Succeeded || len(kvs) == 0 || string(kvs[0].Key) != floorKey {
			return fmt.Errorf("floor: %s not created first", floorKey)
		}
		return nil
	}
	floor.unlock = func(ctx context.Context) error {
		_, err := cli.Delete(ctx, floorKey)
		return err
	}

	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int(etcdTTL/time.Second)))
	if err != nil {
		tb.Fatalf("concurrency.NewSession = %v", err)
	}
	tb.Cleanup(func() { sess.Close() })
	peerPfx := benchName("etcd-peer")
	cm := concurrency.NewMutex(sess, peerPfx)
	peer := &pair{impl: "peer", what: "concurrency.Mutex, reused session",
		lock:    cm.Lock,
		unlock:  cm.Unlock,
		entries: count(peerPfx + "/")}

	c, err := etcdlock.New(cli, etcdlock.Options{TTL: etcdTTL})
	if err != nil {
		tb.Fatalf("etcdlock.New = %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	name := benchName("etcd-baton")
	m, err := c.Mutex(name)
	if err != nil {
		tb.Fatalf("Mutex(%q) = %v", name, err)
	}
	bp := batonPair(m, "etcdlock Mutex", count(name+"/"))
	return &rig{
		engine:    "etcd",
		pairs:     []*pair{bp, floor, peer},
		requests:  func() (int64, error) { return rc.requests(), nil },
		breakdown: rc.snapshot,
	}
}
