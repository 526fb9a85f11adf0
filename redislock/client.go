package redislock

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/internal/gopool"
	"github.com/baton-go/baton/internal/rediseval"
)

// ErrNotReplicated is wrapped (with baton.ErrUnavailable) by an acquire
// that was granted on the primary but not acknowledged by
// Options.ReplicaAcks replicas within Options.ReplicaAckTimeout. The grant
// has been released (owner-checked) before the error is returned, or is
// being released in the background if the primary did not answer.
var ErrNotReplicated = errors.New("redislock: grant not acknowledged by enough replicas")

// ErrBadCounter is wrapped by an acquire refused because the name's token
// counter holds a value outside 0…2^53-1: negative (written by hand or by
// another program) or past 2^53, where the scripts' Lua numbers (doubles)
// lose increments, so tokens would repeat instead of increasing. Nothing
// was granted. Repair the counter (SET it to a value in range above every
// token issued, or raise Options.TokenFloor and reset it) before retrying.
var ErrBadCounter = errors.New("redislock: token counter out of range")

// Client is one process's handle on the locks of one Redis deployment,
// through the caller's go-redis client. It owns a keeper (see package
// keeper: two long-lived goroutines, plus one per renewal request in
// flight, renewing every lease it holds in pipelined batches, on a
// connection of rdb's pool it keeps for them: see warm.go) and, once
// somebody waits, one pub/sub connection (one goroutine) that wakes
// waiters when a lock they wait for is released. Its close stops and
// releases them.
//
// New returns it as a *baton.Client, the type every engine gives; baton.As
// hands this Client back for what only Redis has (Stats, Prefix, TTL):
//
//	rc, ok := baton.As[*redislock.Client](c)
type Client struct {
	rdb redis.UniversalClient
	o   Options
	// ctxCut: the redis client cuts blocked reads at a context's deadline
	// itself (ContextTimeoutEnabled), so calls need no goroutine of ours.
	ctxCut bool
	ttlArg any // o.TTL in ms, boxed once: every acquire sends it
	// procArg is the holder record (engine.ProcessData of o.Process),
	// encoded and boxed once: every grant, renewal and release sends it.
	procArg any
	st      *store
	k       *keeper.Keeper
	eng     *leasekit.Engine // the recipes, on st
	hub     *hub
	wo      wakeOne // one waiter woken per release (wakeone.go)

	ctx    context.Context // cancelled by Close: in-flight attempts end with it
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool

	// calls tracks the goroutines that run Redis calls for callers whose
	// context may end first (see call).
	callMu   sync.Mutex
	draining bool
	calls    sync.WaitGroup
	pool     *gopool.Pool // the goroutines those calls run on
}

// New returns a client on rdb, which the caller keeps owning (Close does
// not close it). It does not touch the server.
func New(rdb redis.UniversalClient, o Options) (*baton.Client, error) {
	c, err := newClient(rdb, o)
	if err != nil {
		return nil, err
	}
	return engine.NewClient(connOf(c, nil)), nil
}

// newClient is New's Client, before package engine wraps it.
func newClient(rdb redis.UniversalClient, o Options) (*Client, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: redislock: nil redis client", baton.ErrInvalidOption)
	}
	o, err := o.validate()
	if err != nil {
		return nil, err
	}
	if o.ReplicaAcks > 0 {
		if _, ok := rdb.(*redis.Client); !ok {
			return nil, fmt.Errorf("%w: redislock: ReplicaAcks needs a *redis.Client (WAIT must reach the primary that ran the acquire, on its connection); got %T", baton.ErrInvalidOption, rdb)
		}
	}
	c := &Client{rdb: rdb, o: o}
	c.ctxCut = contextTimeoutEnabled(rdb)
	c.ttlArg = o.TTL.Milliseconds()
	c.procArg = engine.ProcessData(o.Process)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.pool = gopool.New(c.ctx.Done(), 8) // a few workers wait for the next call
	c.st = &store{c: c}
	c.st.warm = warmFor(rdb)
	c.wo.init(rdb, o)
	c.hub = newHub(c)
	c.k, err = keeper.New(c.st, keeper.Options{TTL: o.TTL, DriftMargin: o.DriftMargin, Backoff: o.Backoff,
		Observer: o.Observer, Engine: "redis"})
	if err != nil {
		c.cancel()
		c.st.warm.release()
		return nil, fmt.Errorf("redislock: %w", err)
	}
	c.eng = &leasekit.Engine{
		Name: "redis", Pkg: "redislock", Opts: o.common(), Keeper: c.k, Store: c.st,
		Ctx: c.ctx, Err: c.checkOpen, AttemptTimeout: o.TTL / 3, Millis: true,
	}
	return c, nil
}

// TTL returns the renewed lease time of a key (Options.TTL, or its
// default). It is reached through baton.As.
func (c *Client) TTL() time.Duration { return c.o.TTL }

// Prefix returns the key prefix (Options.Prefix, or its default). It is
// reached through baton.As.
func (c *Client) Prefix() string { return c.o.Prefix }

// Stats returns the counters of the keeper that renews this client's
// leases (rounds, pipelined batches, releases, suspensions, losses), for
// tests and monitoring. It is reached through baton.As.
func (c *Client) Stats() keeper.Stats { return c.k.Stats() }

// driftMargin returns the margin subtracted from every lease deadline:
// Options.DriftMargin, or its default.
func (c *Client) driftMargin() time.Duration { return c.k.DriftMargin() }

// checkOpen returns an error wrapping baton.ErrClosed after Close.
func (c *Client) checkOpen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("redislock: %w", baton.ErrClosed)
	}
	return nil
}

// closeWait bounds how long Close waits for Redis calls that outlived
// their callers' contexts (see call).
func (c *Client) closeWait() time.Duration { return c.o.TTL + 5*time.Second }

// close ends every lease of the client (Lost, cause wrapping
// baton.ErrClosed), frees their keys, wakes its waiters with ErrClosed and
// stops its goroutines: the *baton.Client's Close. It does not close the
// redis client. A second close returns an error wrapping baton.ErrClosed.
//
// It waits for Redis calls that were abandoned by their callers'
// deadlines to end (go-redis ends them at its ReadTimeout, 3s by default),
// at most TTL+5s: a redis client built without read timeouts may leave a
// read blocked on a dead connection beyond that.
func (c *Client) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("redislock: %w", baton.ErrClosed)
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.hub.close()
	err := c.k.Close()
	c.callMu.Lock()
	c.draining = true
	c.callMu.Unlock()
	done := make(chan struct{})
	go func() { c.calls.Wait(); c.pool.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(c.closeWait()):
	}
	c.st.warm.release()
	return err
}

// call runs f, returning when it returns or when ctx ends, whichever is
// first. go-redis does not cut a blocked socket read at a context deadline
// unless the redis client was built with ContextTimeoutEnabled (false by
// default): without this, a partitioned server would hold every baton call
// for the client's ReadTimeout instead of the caller's deadline. f runs in
// a goroutine owned by the Client (Close waits for it); when ctx ends first
// the outcome of f is unknown and the caller treats it so.
//
// A redis client built with ContextTimeoutEnabled honours deadlines by
// itself: then f runs on the caller's goroutine, which saves a goroutine
// and a hand-off per call.
func (c *Client) call(ctx context.Context, f func(context.Context) error) error {
	_, err := c.callTracked(ctx, f)
	return err
}

// closedDone is the done channel of a call that has returned.
var closedDone = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// callTracked is call that also returns a channel closed once f has
// returned: an abandoned call may still act on the server, and cleanup that
// must land after it (a waiting intent's removal) waits for it.
func (c *Client) callTracked(ctx context.Context, f func(context.Context) error) (<-chan struct{}, error) {
	if c.direct(ctx) {
		return closedDone, f(ctx)
	}
	c.callMu.Lock()
	if c.draining {
		c.callMu.Unlock()
		return closedDone, f(ctx)
	}
	c.calls.Add(1)
	c.callMu.Unlock()
	result := make(chan error, 1)
	finished := make(chan struct{})
	c.pool.Go(func() {
		defer c.calls.Done()
		defer close(finished)
		result <- f(ctx)
	})
	select {
	case err := <-result:
		return closedDone, err
	case <-ctx.Done():
		return finished, fmt.Errorf("%w (the Redis call's outcome is unknown)", ctx.Err())
	}
}

// direct reports whether a Redis call under ctx runs on the caller's
// goroutine: when ctx never ends, or when the redis client cuts blocked
// reads at ctx's deadline itself. Hot paths test it before building the
// closure call takes, which would otherwise be allocated even when it runs
// in place.
func (c *Client) direct(ctx context.Context) bool { return c.ctxCut || ctx.Done() == nil }

// contextTimeoutEnabled reports whether rdb cuts blocked socket reads at
// a context's deadline (go-redis' ContextTimeoutEnabled option).
func contextTimeoutEnabled(rdb redis.UniversalClient) bool {
	switch r := rdb.(type) {
	case *redis.Client:
		return r.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return r.Options().ContextTimeoutEnabled
	}
	return false
}

// entry is one entry of a lock name as inspect reads it on the server.
type entry struct {
	Recipe string        // "mutex", "read", "write", "permit" or "leader"
	Role   string        // "holder" or "waiting"
	Owner  string        // the grant's owner; a waiter's id for waiting entries
	Token  uint64        // the fencing token, TokenFloor included (0 for waiting entries)
	ID     string        // a leader's candidate ID
	TTL    time.Duration // time left on the server's clock
	// Process is the holder record its grant stored (Options.Process);
	// zero for waiting entries and for grants of a baton that stored none.
	Process baton.Process
}

// inspection is what inspect reads about one lock name.
type inspection struct {
	Name    string
	Entries []entry // holders first, then waiters, by recipe
	// Permits is the N stored by a semaphore's holders, 0 when none is
	// held.
	Permits int
}

// inspect reads, in one round trip, every unexpired entry of name on the
// server: holders of each recipe with owner, token, time left and holder
// record, and the waiting intents acquirers recorded, in the order they
// are served. It changes nothing. An error reaching the server wraps
// baton.ErrAuth when the server refused (credentials, ACL, TLS), else
// baton.ErrUnavailable. A holder's token whose sum with TokenFloor would
// overflow uint64 fails the inspection with an error wrapping
// baton.ErrInvalidOption, as such an acquire does.
func (c *Client) inspect(ctx context.Context, name string) (inspection, error) {
	n, err := engine.ValidateName(name)
	if err != nil {
		return inspection{}, err
	}
	k := c.keysOf(n)
	ks := []string{
		k.base + sfxMutex, k.base + sfxMutexWaiters,
		k.base + sfxRWWrite, k.base + sfxRWReaders, k.base + sfxRWQueue, k.base + sfxRWOrder,
		k.base + sfxSemPermits, k.base + sfxSemN, k.base + sfxSemWaiters,
		k.base + sfxElect, k.base + sfxElectWaiters, k.base + sfxRWProcs, k.base + sfxSemProcs,
	}
	var v []any
	err = c.call(ctx, func(ctx context.Context) error {
		got, err := inspect.Run(ctx, c.rdb, ks).Slice()
		if err == nil {
			v = got // read by the caller only when call returns nil
		}
		return err
	})
	if err != nil {
		return inspection{}, fmt.Errorf("redislock: inspect %q: %w", n, rediseval.Classify(err))
	}
	in := inspection{Name: n}
	if len(v) != 2 {
		return in, fmt.Errorf("redislock: inspect %q: unexpected reply %v", n, v)
	}
	rows, _ := v[0].([]any)
	for _, r := range rows {
		f, _ := r.([]any)
		if len(f) != 7 {
			continue
		}
		e := entry{Recipe: str(f[0]), Role: str(f[1]), Owner: str(f[2]), ID: str(f[4]), Process: engine.ParseProcess(str(f[6]))}
		if raw, _ := strconv.ParseUint(str(f[3]), 10, 64); raw > 0 {
			tok, ok := leasekit.Token(raw, c.o.TokenFloor)
			if !ok {
				return inspection{}, fmt.Errorf("redislock: inspect %q: %w: token %d + TokenFloor %d overflows uint64",
					n, baton.ErrInvalidOption, raw, c.o.TokenFloor)
			}
			e.Token = tok
		}
		ms, _ := strconv.ParseInt(str(f[5]), 10, 64)
		e.TTL = time.Duration(ms) * time.Millisecond
		in.Entries = append(in.Entries, e)
	}
	sort.SliceStable(in.Entries, func(i, j int) bool {
		return in.Entries[i].Role == "holder" && in.Entries[j].Role != "holder"
	})
	in.Permits, _ = strconv.Atoi(str(v[1]))
	return in, nil
}

// entries lists the unexpired entries of name as "recipe/role/owner", for
// tests.
func (c *Client) entries(ctx context.Context, name string) ([]string, error) {
	in, err := c.inspect(ctx, name)
	if err != nil {
		return nil, err
	}
	es := make([]string, 0, len(in.Entries))
	for _, e := range in.Entries {
		es = append(es, e.Recipe+"/"+e.Role+"/"+e.Owner)
	}
	return es, nil
}

// str renders a script reply element.
func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}
