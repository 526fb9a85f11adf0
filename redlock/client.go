package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/internal/gopool"
	"github.com/redis/go-redis/v9"
)

// Errors of this package, besides baton's sentinels.
var (
	// ErrNodeIndex is wrapped (with baton.ErrInvalidOption) when a node
	// stores an index other than its position in the list given to New:
	// the nodes are listed in another order (or another set) than the
	// deployment's first client listed them, and the quorum token's proof
	// no longer holds. The Client refuses every call from then on.
	ErrNodeIndex = errors.New("redlock: node index mismatch")

	// ErrNodeWiped is wrapped in an attempt's error when a node this
	// Client verified has lost its index: it was flushed or restarted
	// without persistence, so its counter may have been rewound. The
	// Client refuses that node from then on (see "Assumptions").
	ErrNodeWiped = errors.New("redlock: node lost its index (flushed or restarted without persistence)")

	// ErrBadCounter is wrapped in an attempt's error when a node's token
	// counter is not a number in 0…2^53-N: negative (written by hand or by
	// another program) or so large that the scripts' Lua numbers (doubles)
	// would lose increments and mint repeated tokens. The node grants
	// nothing; an acquire that cannot reach a majority for it fails at
	// once, without a grant. Repair the counter (see "Recovery").
	ErrBadCounter = errors.New("redlock: token counter out of range")
)

// Client is one process's handle on a Redlock deployment of N independent
// redis-servers. It owns a keeper (see package keeper: two long-lived
// goroutines, plus one per renewal request in flight, extending every
// lease it holds, on every node, in batches) and the goroutines of its
// in-flight node requests. Its close stops and releases them; it does not
// close the nodes' clients, which the caller keeps owning.
//
// New returns it as a *baton.Client, the type every engine gives; baton.As
// hands this Client back for what only Redlock has (Stats, Verify):
//
//	rc, ok := baton.As[*redlock.Client](c)
type Client struct {
	o      Options
	nodes  []*node
	all    []int // every node's index, for the rounds that go to all of them (never written to)
	maj    int
	drift  time.Duration
	st     *store
	k      *keeper.Keeper
	eng    *leasekit.Engine // the mutex, on st
	keyIdx string
	keyCtr string
	ttlArg any // o.TTL in ms, boxed once: every acquire sends it
	// procArg is the holder record (engine.ProcessData of o.Process),
	// encoded and boxed once: every acquire sends it to every node.
	procArg any

	verifyMu sync.Mutex
	verified bool         // every answering node had the right index at least once
	broken   atomic.Value // error: an index mismatch; the client refuses to run

	calls sync.WaitGroup // in-flight node requests (see call)
	pool  *gopool.Pool   // the goroutines node requests run on (see fanOut)

	ctx    context.Context // cancelled by Close: in-flight attempts end with it
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
	// draining: Close waits for calls; a round that starts now sends
	// nothing (a WaitGroup must not grow from zero during its Wait).
	draining bool
	// late: granted attempts whose acquire requests are still in
	// flight, by owner, each closed once they all answered (late.go).
	late map[string]chan struct{}

	hooks hooks

	wo  wakeOne // waiters' ids and the client's channel (wakeone.go)
	hub *hub    // wakes this client's waiters, listening on one node

	attempts, nodeRequests, writeBacks, unlocks, wiped atomic.Uint64
}

// node is one redis-server of the deployment.
type node struct {
	i    int
	addr string
	rdb  redis.UniversalClient
	// known: this client has seen the node's index (it set it or read
	// it). From then on a missing index means the node was wiped.
	known atomic.Bool
	// refused: the node lost its index after this client knew it.
	refused atomic.Bool
}

// hooks let this package's tests build interleavings no real fault can
// produce deterministically (see export_test.go). The zero value is the
// real protocol.
type hooks struct {
	// writeBack picks the nodes the write-back raises, given the granting
	// nodes and the node that minted the token; nil means the granting
	// nodes but the minter (the protocol). A control returns nil (skip)
	// or other nodes.
	writeBack func(granting []int, minter int) []int
}

// New returns a client on nodes, N ≥ 3 independent redis-servers (odd N
// recommended: an even N tolerates no more failures than N−1), in the
// same order in every client of the deployment: node i must store index
// i. The caller keeps owning the clients; each must reach exactly one
// server (a *redis.Client; not a Cluster or a failover client, whose
// promoted replicas would rewind the counter).
//
// New does not touch the nodes. The first call that needs them (or
// Verify) reads every node's stored index, setting it with SET NX where
// it is absent, and the Client refuses to run (ErrNodeIndex) unless node
// i stores i.
//
// go-redis honours a context's deadline on a blocked socket read only
// with ContextTimeoutEnabled; baton's per-node deadlines hold either way,
// because every node request runs in a goroutine the call abandons at its
// deadline (the client's Close waits for them: see close).
//
// Its *baton.Client has the mutex only: RWMutex, Semaphore and Election
// fail with an error wrapping baton.ErrInvalidOption. Its Close closes the
// Redlock client, not the nodes' clients.
func New(nodes []redis.UniversalClient, o Options) (*baton.Client, error) {
	c, err := newClient(nodes, o)
	if err != nil {
		return nil, err
	}
	return engine.NewClient(batonConn{c: c}), nil
}

// newClient is New's Client, before package engine wraps it.
func newClient(nodes []redis.UniversalClient, o Options) (*Client, error) {
	if len(nodes) < minNodes {
		return nil, fmt.Errorf("%w: redlock: %d nodes, want ≥ %d", baton.ErrInvalidOption, len(nodes), minNodes)
	}
	o, err := o.validate()
	if err != nil {
		return nil, err
	}
	c := &Client{
		o:       o,
		maj:     len(nodes)/2 + 1,
		drift:   o.drift(),
		keyIdx:  o.Prefix + "index",
		keyCtr:  o.Prefix + "counter",
		ttlArg:  o.TTL.Milliseconds(),
		procArg: engine.ProcessData(o.Process),
		late:    map[string]chan struct{}{},
	}
	for i, rdb := range nodes {
		if rdb == nil {
			return nil, fmt.Errorf("%w: redlock: node %d is nil", baton.ErrInvalidOption, i)
		}
		c.nodes = append(c.nodes, &node{i: i, addr: addrOf(rdb, i), rdb: rdb})
		c.all = append(c.all, i)
	}
	c.wo.init(o, len(c.nodes))
	c.hub = newHub(c)
	c.st = &store{c: c}
	c.k, err = keeper.New(c.st, keeper.Options{TTL: o.TTL, DriftMargin: o.DriftMargin + c.drift, Backoff: o.Backoff,
		Observer: o.Observer, Engine: "redlock"})
	if err != nil {
		return nil, fmt.Errorf("redlock: %w", err)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.pool = gopool.New(c.ctx.Done(), 2*len(c.nodes)) // a round's requests find as many workers waiting
	// No AttemptTimeout: an attempt bounds itself (acquireBudget) and its
	// node requests (NodeTimeout).
	c.eng = &leasekit.Engine{
		Name: "redlock", Pkg: "redlock", Opts: o.common(), Keeper: c.k, Store: c.st,
		Ctx: c.ctx, Err: c.checkOpen,
	}
	return c, nil
}

// addrOf names a node for messages.
func addrOf(rdb redis.UniversalClient, i int) string {
	if o, ok := rdb.(interface{ Options() *redis.Options }); ok && o.Options() != nil {
		return o.Options().Addr
	}
	return "node" + strconv.Itoa(i)
}

// ttl returns the lease time of a lock key.
func (c *Client) ttl() time.Duration { return c.o.TTL }

// majority returns N/2+1, the votes a grant needs.
func (c *Client) majority() int { return c.maj }

// driftMargin returns the margin the keeper subtracts from every lease
// deadline: Options.DriftMargin (or its default) plus the Redlock drift,
// TTL·DriftFactor + 2ms.
func (c *Client) driftMargin() time.Duration { return c.k.DriftMargin() }

// Stats counts a client's protocol work since New, for tests and
// monitoring.
type Stats struct {
	Attempts     uint64 // acquire attempts (one per TryLock, one per retry of Lock)
	NodeRequests uint64 // acquire scripts sent to nodes
	WriteBacks   uint64 // write-back (raise) scripts sent to nodes
	Unlocks      uint64 // unlock scripts sent to nodes after failed attempts
	WipedNodes   uint64 // nodes refused because they lost their index

	// Keeper counts the work of the keeper that extends the held leases on
	// every node (rounds, batches, releases, suspensions, losses).
	Keeper keeper.Stats
}

// Stats returns the client's counters. It is reached through baton.As.
func (c *Client) Stats() Stats {
	return Stats{
		Attempts:     c.attempts.Load(),
		NodeRequests: c.nodeRequests.Load(),
		WriteBacks:   c.writeBacks.Load(),
		Unlocks:      c.unlocks.Load(),
		WipedNodes:   c.wiped.Load(),
		Keeper:       c.k.Stats(),
	}
}

// checkOpen returns an error wrapping baton.ErrClosed after Close, or the
// index mismatch that broke the client.
func (c *Client) checkOpen() error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("redlock: %w", baton.ErrClosed)
	}
	if err, _ := c.broken.Load().(error); err != nil {
		return err
	}
	return nil
}

// close ends every lease of the client (Lost, cause wrapping
// baton.ErrClosed), unlocks their keys on every node it can reach within
// a bounded time (the rest expire by their TTL), wakes its waiters with
// ErrClosed, and waits for its goroutines, including node requests still
// blocked in go-redis: those end at the node client's ReadTimeout (3s by
// default) when ContextTimeoutEnabled is off, at baton's deadline when it
// is on: the *baton.Client's Close. A second close returns an error
// wrapping baton.ErrClosed.
func (c *Client) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("redlock: %w", baton.ErrClosed)
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	err := c.k.Close() // its releases still reach the nodes
	c.hub.close()
	c.mu.Lock()
	c.draining = true
	c.mu.Unlock()
	c.calls.Wait()
	c.pool.Wait()
	return err
}

// result is one node's answer to a request.
type result struct {
	i   int
	v   any
	err error
}

// fan is one round of requests sent to several nodes at once, each on a
// goroutine of its own (a worker of the Client's pool, which keeps its
// grown stack for the next round: see gopool), and collected until a
// common deadline. go-redis
// does not cut a blocked socket read at the context's deadline unless the
// user's client enables ContextTimeoutEnabled, and a Redlock acquire must
// not wait for a dead node longer than NodeTimeout: so the collector stops
// at the deadline and abandons the requests still running. Their
// goroutines are the Client's (Close waits for them); out has room for
// every result, so an abandoned one never blocks.
//
// The requests run on the caller's context without its cancellation: an
// acquire stops collecting once its outcome is known, and the answers of
// the nodes it did not wait for tell the attempt's clean-up whether they
// granted. Cancelled with the caller, a request still queued for a pooled
// connection failed instead, its outcome unknown, and the clean-up had
// the keeper release the attempt's key on every node.
//
// The fan is itself the requests' context: its deadline, Done and Err
// are those of a context of the Client's (so Close ends it) with the
// round's deadline, its values the caller's (a tracing hook's span). One
// object for the three saved five allocations per round.
type fan struct {
	context.Context                 // ends at the round's deadline, at Close, or at cancel
	vals            context.Context // the caller's ctx, for Value
	stop            context.CancelFunc
	caller          <-chan struct{} // the caller's ctx.Done(): the collector stops there too
	out             chan result
	n, got          int
}

// fanOut sends f to the nodes listed in idx (every node when idx is nil,
// none when it is empty),
// all with the same deadline, timeout from now.
func (c *Client) fanOut(ctx context.Context, idx []int, timeout time.Duration, f func(ctx context.Context, n *node) (any, error)) *fan {
	if idx == nil {
		idx = c.all
	}
	fn := &fan{vals: ctx, out: make(chan result, len(idx)), n: len(idx), caller: ctx.Done()}
	fn.Context, fn.stop = context.WithTimeout(c.ctx, timeout) // Close interrupts the requests
	c.mu.Lock()
	draining := c.draining
	if !draining {
		c.calls.Add(len(idx))
	}
	c.mu.Unlock()
	if draining { // an acquire still running as Close ends
		for _, i := range idx {
			fn.out <- result{i: i, err: fmt.Errorf("node %d: redlock: %w", i, baton.ErrClosed)}
		}
		return fn
	}
	for _, i := range idx {
		n := c.nodes[i]
		c.pool.Go(func() {
			defer c.calls.Done()
			v, err := f(fn, n)
			if err != nil {
				err = fmt.Errorf("node %d (%s): %w", n.i, n.addr, err)
			}
			fn.out <- result{i: n.i, v: v, err: err}
		})
	}
	return fn
}

// usable lists the nodes not refused (c.all while none is: an acquire
// then builds no list of its own).
func (c *Client) usable() []int {
	for _, n := range c.nodes {
		if n.refused.Load() {
			idx := make([]int, 0, len(c.nodes))
			for _, n := range c.nodes {
				if !n.refused.Load() {
					idx = append(idx, n.i)
				}
			}
			return idx
		}
	}
	return c.all
}

// Value is the caller's value: the requests run without its cancellation,
// not without its values.
func (f *fan) Value(key any) any { return f.vals.Value(key) }

// cancel ends the requests' context (and its timer).
func (f *fan) cancel() { f.stop() }

// next returns the next answer, or false once every node answered or the
// round's deadline (or the caller's ctx) ended it.
func (f *fan) next() (result, bool) {
	if f.got == f.n {
		return result{}, false
	}
	select {
	case r := <-f.out:
		f.got++
		return r, true
	case <-f.caller:
	case <-f.Done():
	}
	// Prefer an answer that is already there.
	select {
	case r := <-f.out:
		f.got++
		return r, true
	default:
	}
	return result{}, false
}

// nextOr is next that also gives up when stop fires (a nil stop never
// does).
func (f *fan) nextOr(stop <-chan time.Time) (result, bool) {
	if f.got == f.n {
		return result{}, false
	}
	select {
	case r := <-f.out:
		f.got++
		return r, true
	case <-stop:
		return result{}, false
	case <-f.caller:
		return f.next()
	case <-f.Done():
		return f.next()
	}
}

// drain collects the answers still to come until deadline, ignoring the
// round's context (its requests may outlive it; their answers still
// arrive on out); it returns them when keep is set.
func (f *fan) drain(deadline time.Time, keep bool) []result {
	var out []result
	t := newTimer(time.Until(deadline))
	defer putTimer(t)
	for f.got < f.n {
		select {
		case r := <-f.out:
			f.got++
			if keep {
				out = append(out, r)
			}
		case <-t.C:
			return out
		}
	}
	return out
}

// pending is how many nodes have not answered (their outcome is unknown).
func (f *fan) pending() int { return f.n - f.got }

// Verify reads every node's stored index, setting it (SET NX) where it is
// absent, and returns an error wrapping baton.ErrInvalidOption and
// ErrNodeIndex when node i stores another index than i; the Client then
// refuses to run. Nodes that do not answer are checked at their first
// answer to an acquire. It fails with baton.ErrUnavailable when fewer than
// a majority answered. The first acquire runs it when it has not
// succeeded yet. It is reached through baton.As.
func (c *Client) Verify(ctx context.Context) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	c.verifyMu.Lock()
	defer c.verifyMu.Unlock()
	if c.verified {
		return nil
	}
	f := c.fanOut(ctx, nil, c.o.NodeTimeout*4, func(ctx context.Context, nd *node) (any, error) {
		return indexScript.Run(ctx, nd.rdb, []string{c.keyIdx}, nd.i).Result()
	})
	defer f.cancel()
	ok := 0
	var errs []error
	for {
		r, more := f.next()
		if !more {
			break
		}
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		if err := c.checkIndex(r.i, r.v); err != nil {
			return err
		}
		ok++
	}
	if f.pending() > 0 {
		errs = append(errs, fmt.Errorf("%d node(s) did not answer within %v", f.pending(), c.o.NodeTimeout*4))
	}
	if ok < c.maj {
		if ctx.Err() != nil {
			return fmt.Errorf("redlock: verify the node indexes: %w", ctx.Err())
		}
		return fmt.Errorf("%w: redlock: verify the node indexes: %d of %d nodes answered, want ≥ %d: %w", baton.ErrUnavailable, ok, len(c.nodes), c.maj, errors.Join(errs...))
	}
	c.verified = true
	return nil
}

// checkIndex compares what node i stores as its index with i, marks the
// node known, and breaks the client on a mismatch.
func (c *Client) checkIndex(i int, v any) error {
	s := fmt.Sprint(v)
	if s == strconv.Itoa(i) {
		c.nodes[i].known.Store(true)
		return nil
	}
	err := fmt.Errorf("%w: %w: node %d (%s) stores index %q under %q, want %d: every client must list the nodes in the same order as the first one did",
		baton.ErrInvalidOption, ErrNodeIndex, i, c.nodes[i].addr, s, c.keyIdx, i)
	c.broken.CompareAndSwap(nil, err)
	return c.broken.Load().(error)
}

// lockKey is the key of lock name on every node.
func (c *Client) lockKey(name string) string { return c.o.Prefix + "lock:" + name }

// nodeEntry is what one node holds for a lock.
type nodeEntry struct {
	Node    int           // index
	Addr    string        // the node client's address
	Owner   string        // the holding grant's owner ("" when free)
	Token   uint64        // the token this node minted for the holder
	Grant   uint64        // the grant's quorum token, once recorded here (0 before; see inspect)
	TTLLeft time.Duration // time left on the node's clock (0 when free)
	Counter uint64        // the node's token counter
	Index   string        // the node's stored index ("" when missing)
	// Process is the holder record the grant stored on this node
	// (Options.Process); zero when free, or for a baton that stored none.
	Process baton.Process
	// Waiters are the waiters this node lists, by arrival: the order in
	// which its releases wake them.
	Waiters []waiter
	Err     error // the node did not answer
}

// waiter is a waiting Lock as a node lists it: its id (see wakeone.go),
// its arrival on the waiter's clock, the same on every node, and the
// time its intent has left on the node's clock unless the waiter retries.
type waiter struct {
	ID      string
	Arrival time.Time
	Left    time.Duration
}

// inspect reads what every node holds for lock name, without taking
// anything; a node that does not answer within NodeTimeout·4 has Err set.
// Tokens are shown without TokenFloor. A node records the grant's quorum
// token at the grant's first renewal (TTL/3 after it), or at once when the
// acquire raised its counter (a lagging node): the acquire cannot know the
// token when it creates the key, and a second round just to record it
// would cost every lock a round trip. The node that minted the quorum
// token is never raised: its Grant is its Token when another node of the
// same owner records that grant.
func (c *Client) inspect(ctx context.Context, name string) ([]nodeEntry, error) {
	n, err := engine.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("redlock: Inspect: %w", err)
	}
	if c.checkOpen() != nil && !errors.Is(c.checkOpen(), ErrNodeIndex) {
		return nil, c.checkOpen()
	}
	key := c.lockKey(n)
	f := c.fanOut(ctx, nil, c.o.NodeTimeout*4, func(ctx context.Context, nd *node) (any, error) {
		return inspectScript.Run(ctx, nd.rdb, []string{key, c.keyCtr, c.keyIdx, c.waitersKey(n), c.intentsKey(n)}).Result()
	})
	defer f.cancel()
	out := make([]nodeEntry, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = nodeEntry{Node: i, Addr: nd.addr, Err: fmt.Errorf("node %d (%s): no answer within %v", i, nd.addr, c.o.NodeTimeout*4)}
	}
	for {
		r, more := f.next()
		if !more {
			break
		}
		e := nodeEntry{Node: r.i, Addr: c.nodes[r.i].addr, Err: r.err}
		if r.err == nil {
			vs, _ := r.v.([]any)
			if len(vs) == 8 {
				e.Owner = str(vs[0])
				e.Token = num(vs[1])
				e.Grant = num(vs[2])
				if ms, ok := vs[3].(int64); ok && ms > 0 && e.Owner != "" {
					e.TTLLeft = time.Duration(ms) * time.Millisecond
				}
				e.Counter = num(vs[4])
				e.Index = str(vs[5])
				e.Process = engine.ParseProcess(str(vs[6]))
				e.Waiters = waiters(vs[7])
			}
		}
		out[r.i] = e
	}
	for i, e := range out {
		for _, o := range out {
			if e.Owner != "" && e.Grant == 0 && o.Owner == e.Owner && o.Grant == e.Token {
				out[i].Grant = e.Token // the minter: tokens ≡ node (mod N) are its alone
			}
		}
	}
	return out, nil
}

// entries lists the nodes holding lock name as "node<i>/<owner>", for
// tests; it fails when a node does not answer.
func (c *Client) entries(ctx context.Context, name string) ([]string, error) {
	es, err := c.inspect(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		if e.Err != nil {
			return nil, fmt.Errorf("redlock: entries %q: %w", name, e.Err)
		}
		if e.Owner != "" {
			out = append(out, fmt.Sprintf("node%d/%s", e.Node, e.Owner))
		}
	}
	return out, nil
}

// waiters reads the inspect script's flat list of waiters.
func waiters(v any) []waiter {
	ws, _ := v.([]any)
	var out []waiter
	for i := 0; i+2 < len(ws); i += 3 {
		out = append(out, waiter{
			ID:      str(ws[i]),
			Arrival: time.UnixMilli(int64(num(ws[i+1]))),
			Left:    time.Duration(num(ws[i+2])) * time.Millisecond,
		})
	}
	return out
}

// str turns a script's bulk reply into a string ("" for nil).
func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// num turns a script's integer or bulk reply into a uint64 (0 when absent
// or not a number).
func num(v any) uint64 {
	switch x := v.(type) {
	case int64:
		if x > 0 {
			return uint64(x)
		}
	case string:
		u, err := strconv.ParseUint(x, 10, 64)
		if err == nil {
			return u
		}
	}
	return 0
}
