package drill_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
	batonengine "github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit/drillhook"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/zklock"
)

// Session timeout / lease TTL of the drills: short, so faults that wait
// for an expiry stay cheap.
const (
	zkTimeout = 1500 * time.Millisecond
	etcdTTL   = 2 * time.Second
)

// family says how an engine grants: queue engines (zklock, etcdlock)
// enqueue every waiter on the server and grant in order; lease engines
// (sqllock, redislock, redlock) keep only the holder's lease on the
// server, and their waiters retry. The drills assert queue order, one
// watch per waiter and orphaned entries of waiters only where the family
// has them.
type family int

const (
	queueFamily family = iota
	leaseFamily
)

// engine is one lock engine as the drills drive it. Capabilities that only
// some engines have are nil or false on the others.
type engine struct {
	name   string
	family family
	ttl    time.Duration
	// endpoint is what the holder child process dials: the server address,
	// or a DSN (SQL).
	endpoint string
	// network: the engine is reached over TCP through a fault proxy, so
	// transport faults apply (false for SQLite, which is embedded).
	network bool
	// recipes are the recipes the recipe rows (3, 4, 8) run on the engine.
	recipes []recipe
	// owns reports whether an entry of scan belongs to the grant of owner
	// (ZooKeeper's protected prefix, etcd's lease key, a SQL row's owner).
	owns func(entry, owner string) bool
	// sql is the database of a SQL engine (fenced resources on the same
	// database, backend terminations); nil on the others.
	sql *sqlTarget
	// open returns a lock client with its own session, through a fresh
	// fault proxy when o.proxied. It is closed at cleanup.
	open func(t *testing.T, o clientOpts) *lockClient
	// scan lists name's queue, or a lease engine's owned rows or keys,
	// through a healthy client (orphan scans).
	scan func(ctx context.Context, name string) ([]string, error)
	// del deletes a queue entry behind the recipe's back (row 15; queue
	// engines only).
	del func(ctx context.Context, key string) error
	// order is the queue order of a granted entry, for the FIFO check
	// (queue engines only).
	order func(entry string, token uint64) uint64
	// nodeTimeout is how long the engine waits for one server's answer
	// before it counts that server as down (Redlock's NodeTimeout, at most
	// TTL/4); 0 when a slow answer is only late. Row 8's latency below
	// the budget stays below it.
	nodeTimeout time.Duration
}

type clientOpts struct {
	proxied  bool
	hooks    *drillhook.Hooks  // a holder's acquires carry them in their context
	upstream string            // dial this address instead of the server (counting proxy)
	grpc     []grpc.DialOption // etcd: extra dial options (request counting)
	etcdCli  *clientv3.Client  // etcd: share this client instead of dialing one
	ttl      time.Duration     // session timeout / lease TTL instead of the drills' short one
	appName  string            // SQL: the connection's application name (PostgreSQL), to find its backends
	pool     int               // SQL: the client's pool size (MaxOpenConns), 0 for database/sql's default
	share    *lockClient       // lease engines: use this client (one pool for many waiters)
}

// lockClient is one lock client of a drill.
type lockClient struct {
	proxy faultLink // nil unless proxied
	mutex func(name string) (baton.Locker, error)
	close func() error
	zk    *zklock.Client // set on ZooKeeper
	// lease is set on lease engines: waiters hold nothing on the server.
	lease bool
	// cutResponse makes the server's answer to the client's next request
	// go missing while the request itself is applied (row 1); nil means
	// proxy.CutAfter(Downstream, 0), right for a one-message request.
	cutResponse func(t *testing.T) error
	// bytes counts the bytes of a proxied lease client's connections.
	bytes *byteCounter
	// recipes makes the other recipes (RW lock, semaphore, election) on
	// this client; entries is its orphan scan.
	recipes recipeEngine
	entries func(ctx context.Context, name string) ([]string, error)
}

// faultLink is the transport between a proxied client and its servers:
// one fault proxy (*faultproxy.Proxy), or one per server of a client that
// reaches several (a Redlock client's faultGroup), faulted all at once.
type faultLink interface {
	Blackhole(dir faultproxy.Direction) error
	Latency(dir faultproxy.Direction, d, jitter time.Duration) error
	CutAfter(dir faultproxy.Direction, n int64) error
	Heal()
	Refuse()
	Accept() error
	Close()
}

// forEachQueueEngine runs f as a subtest per queue engine.
func forEachQueueEngine(t *testing.T, f func(t *testing.T, e *engine)) {
	t.Run("zk", func(t *testing.T) { f(t, zkEngine(t)) })
	t.Run("etcd", func(t *testing.T) { f(t, etcdEngine(t)) })
}

// forEachEngine runs f as a subtest per engine: the queue engines, then
// the lease engines (engines_lease_test.go).
func forEachEngine(t *testing.T, f func(t *testing.T, e *engine)) {
	forEachQueueEngine(t, f)
	forEachLeaseEngine(t, f)
}

// forEachNetworkEngine is forEachEngine without the engines embedded in
// the process (SQLite): transport faults do not apply to them, so they
// get no subtest rather than one that skips.
func forEachNetworkEngine(t *testing.T, f func(t *testing.T, e *engine)) {
	forEachQueueEngine(t, f)
	runLeaseEngines(t, func(le leaseEngine) bool { return !le.embedded }, f)
}

// queueMutex adapts a queue engine's *baton.Client to lockClient.mutex.
func queueMutex(c *baton.Client) func(string) (baton.Locker, error) {
	return func(name string) (baton.Locker, error) {
		m, err := c.Mutex(name)
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return m, nil
	}
}

// queueEntries is a queue engine's raw listing of entries (the Entries of
// *zklock.Client and *etcdlock.Client), reached through baton.As.
func queueEntries(c *baton.Client) func(ctx context.Context, name string) ([]string, error) {
	l, ok := baton.As[interface {
		Entries(ctx context.Context, name string) ([]string, error)
	}](c)
	if !ok {
		panic("queueEntries: the " + c.Engine() + " engine lists no entries")
	}
	return l.Entries
}

func zkEngine(t *testing.T) *engine {
	addr := testenv.ZK(t)
	e := &engine{name: "zk", ttl: zkTimeout, endpoint: addr, network: true, recipes: allRecipes}
	e.open = func(t *testing.T, o clientOpts) *lockClient {
		t.Helper()
		lc := &lockClient{}
		server := addr
		if o.upstream != "" {
			server = o.upstream
		}
		if o.proxied {
			p, err := faultproxy.Start(server)
			if err != nil {
				t.Fatalf("faultproxy.Start(%q) = %v", server, err)
			}
			t.Cleanup(p.Close)
			lc.proxy, server = p, p.Addr
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		timeout := zkTimeout
		if o.ttl > 0 {
			timeout = o.ttl
		}
		c, err := zklock.Dial(ctx, []string{server}, zklock.Options{SessionTimeout: timeout})
		if err != nil {
			t.Fatalf("zklock.Dial(%q) = %v", server, err)
		}
		t.Cleanup(func() { c.Close() })
		lc.zk, _ = baton.As[*zklock.Client](c)
		lc.mutex, lc.close = queueMutex(c), c.Close
		lc.recipes, lc.entries = c, queueEntries(c)
		return lc
	}
	scanner := e.open(t, clientOpts{})
	e.scan = scanner.entries
	e.del = func(ctx context.Context, key string) error {
		conn := scanner.zk.Conn()
		if conn == nil {
			return errors.New("no ZooKeeper session")
		}
		return conn.Delete(key, -1)
	}
	e.owns = func(entry, owner string) bool { return ownEntries(e, []string{entry}, owner) == 1 }
	e.order = func(entry string, _ uint64) uint64 {
		// Curator layout: …-lock-<10-digit sequence> (an owner may carry
		// "@<suffix>" after the path).
		if i := strings.LastIndexByte(entry, '@'); i > 0 {
			entry = entry[:i]
		}
		if len(entry) < 10 {
			return 0
		}
		n, _ := strconv.ParseUint(entry[len(entry)-10:], 10, 64)
		return n
	}
	return e
}

func etcdEngine(t *testing.T) *engine {
	e := &engine{name: "etcd", ttl: etcdTTL, endpoint: etcdServer.Endpoint, network: true, recipes: allRecipes}
	e.open = func(t *testing.T, o clientOpts) *lockClient {
		t.Helper()
		lc := &lockClient{}
		cli, ownCli := o.etcdCli, o.etcdCli == nil
		if ownCli {
			server := etcdServer.Endpoint
			if o.upstream != "" {
				server = o.upstream
			}
			if o.proxied {
				p, err := faultproxy.Start(server)
				if err != nil {
					t.Fatalf("faultproxy.Start(%q) = %v", server, err)
				}
				t.Cleanup(p.Close)
				lc.proxy, server = p, p.Addr
			}
			cli = rawEtcd(t, server, o.grpc...)
		}
		ttl := etcdTTL
		if o.ttl > 0 {
			ttl = o.ttl
		}
		c, err := etcdlock.New(cli, etcdlock.Options{TTL: ttl})
		if err != nil {
			t.Fatalf("etcdlock.New = %v", err)
		}
		t.Cleanup(func() { c.Close() })
		lc.mutex = queueMutex(c)
		lc.recipes, lc.entries = c, queueEntries(c)
		lc.close = func() error {
			err := c.Close()
			if errors.Is(err, baton.ErrClosed) {
				err = nil
			}
			if ownCli {
				cli.Close()
			}
			return err
		}
		return lc
	}
	raw := rawEtcd(t, etcdServer.Endpoint)
	scanner, err := etcdlock.New(raw, etcdlock.Options{TTL: etcdTTL})
	if err != nil {
		t.Fatalf("etcdlock.New = %v", err)
	}
	t.Cleanup(func() { scanner.Close() })
	e.scan = queueEntries(scanner)
	e.del = func(ctx context.Context, key string) error {
		_, err := raw.Delete(ctx, key)
		return err
	}
	e.owns = func(entry, owner string) bool { return ownEntries(e, []string{entry}, owner) == 1 }
	e.order = func(_ string, token uint64) uint64 { return token }
	return e
}

// rawEtcd returns a plain etcd client to endpoint, closed at cleanup (after
// the baton clients on it, which were registered later).
func rawEtcd(t *testing.T, endpoint string, opts ...grpc.DialOption) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 5 * time.Second,
		DialOptions: opts,
		Logger:      nopZap,
	})
	if err != nil {
		t.Fatalf("clientv3.New(%q) = %v", endpoint, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// name returns a lock name private to one trial.
func lockName(row string, e *engine, seed uint64) string {
	return fmt.Sprintf("drill/%s/%s/%d", row, e.name, seed)
}

// holder is a lock client acting in a drill: its acquires, releases and
// lease states go into the run's history.
type holder struct {
	id  string
	run *drilltest.Run
	e   *engine
	lc  *lockClient
	m   baton.Locker
	// name is the normalised lock name, as leases report it.
	name string
	// hooks go with every acquire of the holder (its context carries
	// them): at least the watch recorder.
	hooks *drillhook.Hooks

	wg sync.WaitGroup // lease observers
}

func newHolder(t *testing.T, run *drilltest.Run, e *engine, id, name string, o clientOpts) *holder {
	t.Helper()
	n, err := batonengine.ValidateName(name)
	if err != nil {
		t.Fatalf("ValidateName(%q) = %v", name, err)
	}
	h := &holder{id: id, run: run, e: e, name: n, hooks: o.hooks}
	if h.hooks == nil {
		h.hooks = &drillhook.Hooks{}
	}
	if h.hooks.BeforeWatch == nil {
		h.hooks.BeforeWatch = h.watched(name)
	}
	// Registered before the client's Close, so it runs after it: Close
	// ends every lease, and with them the observers.
	t.Cleanup(h.wg.Wait)
	h.lc = e.open(t, o)
	m, err := h.lc.mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	h.m = m
	return h
}

// watched records a waiter's watch registration (I10: one per waiter).
func (h *holder) watched(name string) func(blocker string) {
	return func(blocker string) {
		h.run.Rec.Record(drill.Event{Client: h.id, Op: drill.OpWatch, Phase: drill.Info, Name: name, Entry: blocker})
	}
}

// lock acquires and records it; on success it records every later state
// change of the lease until it ends.
func (h *holder) lock(ctx context.Context) (*baton.Lease, error) {
	op := h.run.Rec.Begin(h.id, drill.OpAcquire, h.name, 0)
	l, err := h.m.Lock(drillhook.With(ctx, h.hooks))
	if err != nil {
		op.Fail(err) // the contract: an error means not holding
		return nil, err
	}
	op.End(drill.Ok, func(e *drill.Event) {
		e.Token, e.Entry = l.Token(), l.Owner()
		if h.e.order != nil {
			e.Order = h.e.order(l.Owner(), l.Token())
		}
	})
	h.wg.Add(1)
	go h.observe(l) // owner: the lease; ends when it does
	return l, nil
}

func (h *holder) observe(l *baton.Lease) {
	defer h.wg.Done()
	st, ch := l.Observe()
	for !st.Ended() { // the lease may have ended before this goroutine ran
		<-ch
		st, ch = l.Observe()
		h.run.Rec.Record(drill.Event{Client: h.id, Op: drill.OpState, Phase: drill.Info, Name: l.Name(), Token: l.Token(), Detail: st.String()})
	}
}

// release releases l and records it; a failed release has an unknown
// outcome.
func (h *holder) release(ctx context.Context, l *baton.Lease) error {
	op := h.run.Rec.Begin(h.id, drill.OpRelease, l.Name(), l.Token())
	err := l.Release(ctx)
	if err != nil {
		op.Unknown(err)
	} else {
		op.Ok()
	}
	return err
}

// dialChild opens a client of engine at endpoint in a holder child
// process; close ends it.
func dialChild(ctx context.Context, engine, endpoint string) (*lockClient, error) {
	switch engine {
	case "zk":
		c, err := zklock.Dial(ctx, []string{endpoint}, zklock.Options{SessionTimeout: zkTimeout})
		if err != nil {
			return nil, err
		}
		return &lockClient{mutex: queueMutex(c), recipes: c, entries: queueEntries(c), close: c.Close}, nil
	case "etcd":
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: nopZap})
		if err != nil {
			return nil, err
		}
		c, err := etcdlock.New(cli, etcdlock.Options{TTL: etcdTTL})
		if err != nil {
			cli.Close()
			return nil, err
		}
		return &lockClient{mutex: queueMutex(c), recipes: c, entries: queueEntries(c),
			close: func() error { err := c.Close(); cli.Close(); return err }}, nil
	}
	return dialLeaseChild(ctx, engine, endpoint)
}
