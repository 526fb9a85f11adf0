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
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/internal/faultproxy"
	"github.com/baton-go/baton/internal/testenv"
	"github.com/baton-go/baton/queue"
	"github.com/baton-go/baton/zklock"
)

// Session timeout / lease TTL of the drills: short, so faults that wait
// for an expiry stay cheap.
const (
	zkTimeout = 1500 * time.Millisecond
	etcdTTL   = 2 * time.Second
)

// engine is one queue engine as the drills drive it.
type engine struct {
	name string
	ttl  time.Duration
	// endpoint is the server address (for the holder child process).
	endpoint string
	// open returns a lock client with its own session, through a fresh
	// fault proxy when o.proxied. It is closed at cleanup.
	open func(t *testing.T, o clientOpts) *lockClient
	// scan lists name's queue through a healthy client (orphan scans).
	scan func(ctx context.Context, name string) ([]string, error)
	// del deletes a queue entry behind the recipe's back (row 15).
	del func(ctx context.Context, key string) error
	// order is the queue order of a granted entry, for the FIFO check.
	order func(entry string, token uint64) uint64
}

type clientOpts struct {
	proxied  bool
	hooks    *queue.Hooks
	upstream string            // dial this address instead of the server (counting proxy)
	grpc     []grpc.DialOption // etcd: extra dial options (request counting)
	etcdCli  *clientv3.Client  // etcd: share this client instead of dialing one
	ttl      time.Duration     // session timeout / lease TTL instead of the drills' short one
}

// lockClient is one lock client of a drill.
type lockClient struct {
	proxy *faultproxy.Proxy // nil unless proxied
	mutex func(name string) (*queue.Mutex, error)
	close func() error
	zk    *zklock.Client // set on ZooKeeper
	// recipes makes the other recipes (RW lock, semaphore, election) on
	// this client; entries is its orphan scan.
	recipes recipeEngine
	entries func(ctx context.Context, name string) ([]string, error)
}

// forEachEngine runs f as a subtest per queue engine.
func forEachEngine(t *testing.T, f func(t *testing.T, e *engine)) {
	t.Run("zk", func(t *testing.T) { f(t, zkEngine(t)) })
	t.Run("etcd", func(t *testing.T) { f(t, etcdEngine(t)) })
}

func zkEngine(t *testing.T) *engine {
	addr := testenv.ZK(t)
	e := &engine{name: "zk", ttl: zkTimeout, endpoint: addr}
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
		c, err := zklock.Dial(ctx, []string{server}, zklock.Options{SessionTimeout: timeout, Hooks: o.hooks})
		if err != nil {
			t.Fatalf("zklock.Dial(%q) = %v", server, err)
		}
		t.Cleanup(func() { c.Close() })
		lc.zk, lc.mutex, lc.close = c, c.Mutex, c.Close
		lc.recipes, lc.entries = c, c.Entries
		return lc
	}
	scanner := e.open(t, clientOpts{})
	e.scan = scanner.zk.Entries
	e.del = func(ctx context.Context, key string) error {
		conn := scanner.zk.Conn()
		if conn == nil {
			return errors.New("no ZooKeeper session")
		}
		return conn.Delete(key, -1)
	}
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
	e := &engine{name: "etcd", ttl: etcdTTL, endpoint: etcdServer.Endpoint}
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
		c, err := etcdlock.New(cli, etcdlock.Options{TTL: ttl, Hooks: o.hooks})
		if err != nil {
			t.Fatalf("etcdlock.New = %v", err)
		}
		t.Cleanup(func() { c.Close() })
		lc.mutex = c.Mutex
		lc.recipes, lc.entries = c, c.Entries
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
	e.scan = scanner.Entries
	e.del = func(ctx context.Context, key string) error {
		_, err := raw.Delete(ctx, key)
		return err
	}
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
	run *drill.Run
	e   *engine
	lc  *lockClient
	m   *queue.Mutex

	wg sync.WaitGroup // lease observers
}

func newHolder(t *testing.T, run *drill.Run, e *engine, id, name string, o clientOpts) *holder {
	t.Helper()
	h := &holder{id: id, run: run, e: e}
	if o.hooks == nil {
		o.hooks = &queue.Hooks{}
	}
	if o.hooks.BeforeWatch == nil {
		o.hooks.BeforeWatch = h.watched(name)
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
func (h *holder) watched(name string) func(queue.Entry) {
	return func(b queue.Entry) {
		h.run.Rec.Record(drill.Event{Client: h.id, Op: drill.OpWatch, Phase: drill.Info, Name: name, Entry: b.Key})
	}
}

// lock acquires and records it; on success it records every later state
// change of the lease until it ends.
func (h *holder) lock(ctx context.Context) (*baton.Lease, error) {
	op := h.run.Rec.Begin(h.id, drill.OpAcquire, h.m.Name(), 0)
	l, err := h.m.Lock(ctx)
	if err != nil {
		op.Fail(err) // the contract: an error means not holding
		return nil, err
	}
	op.End(drill.Ok, func(e *drill.Event) {
		e.Token, e.Entry, e.Order = l.Token(), l.Owner(), h.e.order(l.Owner(), l.Token())
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
