package etcdlock

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
	"github.com/baton-go/baton/engine/queuekit"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// revokeTimeout bounds the best-effort revoke of a lease that ended (closed,
// idle or lost). The server expires the lease anyway; the revoke only frees
// its keys sooner.
const revokeTimeout = 2 * time.Second

// Client is baton's etcd engine on a *clientv3.Client: the user's (New)
// or its own (baton.Open), behind the *baton.Client they return. It owns
// a small pool of leases (sessions) and the goroutines that keep them
// alive; the *baton.Client's Close revokes them. It owns the etcd client
// only when baton.Open made it. Users reach it with
// baton.As[*etcdlock.Client] for what only etcd has: the etcd client
// (Etcd), the lease TTLs (TTL, GrantedTTL) and the raw keys tests and
// operators read and remove (Entries, Inspect, Remove).
type Client struct {
	cli    *clientv3.Client
	owned  bool // cli is baton.Open's: Close closes it
	opts   Options
	ttl    int64  // requested lease TTL, seconds
	values values // the entries' values, holder record included

	granted atomic.Int64 // TTL of the most recent grant, seconds

	mu       sync.Mutex
	closed   bool
	sessions map[*session]struct{} // live sessions (not ended)

	// wg counts every goroutine a session owns (keepalive loop, cleanup,
	// watches). Close waits for it.
	wg sync.WaitGroup
}

var (
	_ queuekit.Backend     = backend{}
	_ queuekit.DirWatcher  = (*session)(nil)
	_ queuekit.DataSession = (*session)(nil)
)

// New returns an etcd engine on cli. It validates opts (a negative TTL
// returns an error wrapping baton.ErrInvalidOption) and does not contact
// the server: leases are granted on first use. Closing the returned
// client never closes cli. baton.As[*etcdlock.Client] on it returns the
// engine's own Client.
func New(cli *clientv3.Client, opts Options) (*baton.Client, error) {
	c, err := newClient(cli, opts)
	if err != nil {
		return nil, err
	}
	return engine.NewClient(connOf(c)), nil
}

// newClient is New, returning the engine's own client.
func newClient(cli *clientv3.Client, opts Options) (*Client, error) {
	if cli == nil {
		return nil, fmt.Errorf("%w: etcdlock: nil *clientv3.Client", baton.ErrInvalidOption)
	}
	o, err := opts.validate()
	if err != nil {
		return nil, err
	}
	return &Client{
		cli:      cli,
		opts:     o,
		ttl:      int64(o.TTL / time.Second),
		values:   newValues(o),
		sessions: make(map[*session]struct{}),
	}, nil
}

// Etcd returns the etcd client c runs on: the caller's, or the one
// baton.Open made, which the *baton.Client's Close closes. It is reached
// through baton.As[*etcdlock.Client].
func (c *Client) Etcd() *clientv3.Client { return c.cli }

// TTL returns the requested lease TTL, rounded up to whole seconds. It is
// reached through baton.As[*etcdlock.Client].
func (c *Client) TTL() time.Duration { return time.Duration(c.ttl) * time.Second }

// GrantedTTL returns the TTL the server granted to the most recent lease,
// or 0 before the first grant. etcd silently raises TTLs below its minimum;
// when GrantedTTL differs from TTL, report it (the CLI prints it). It is
// reached through baton.As[*etcdlock.Client].
func (c *Client) GrantedTTL() time.Duration { return time.Duration(c.granted.Load()) * time.Second }

// queueOptions are the options of the client's recipes.
func (c *Client) queueOptions() queuekit.MutexOptions {
	return queuekit.MutexOptions{Observer: c.opts.Observer}
}

// mutex returns the reentrant mutex called name. Its keys are
// "<name>/<lease ID in hex>", the layout of `etcdctl lock <name>` and
// concurrency.Mutex, so they exclude each other.
func (c *Client) mutex(name string) (*queuekit.Mutex, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	return queuekit.NewMutex(backend{c}, name, c.queueOptions())
}

// rwMutex returns the read/write lock called name. Its keys are
// "<name>/<lease hex>" like the mutex's, with the value "__READ__" or
// "__WRIT__"; readers share, a writer waits for every earlier key. Keys of
// other tools under the name (an `etcdctl lock` on the same name) count as
// writers.
func (c *Client) rwMutex(name string) (*queuekit.RWMutex, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	return queuekit.NewRWMutex(backend{c}, name, c.queueOptions())
}

// semaphore returns the semaphore called name with n permits: leases
// "<name>/leases/<lease hex>" with the value "lease-baton:permits=<n>",
// granted while they are among the first n by create revision, with no
// guard mutex (see queuekit.PermitSession). n below 1 returns an error
// wrapping baton.ErrInvalidOption.
func (c *Client) semaphore(name string, n int) (*queuekit.Semaphore, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	return queuekit.NewSemaphore(backend{c}, name, n, c.queueOptions())
}

// election returns the leader election called name, compatible with
// `etcdctl elect name` and concurrency.Election on the prefix "name":
// keys "<name>/<lease hex>" whose value is the candidate's ID (the
// proposal), the leader being the key with the smallest create revision.
// `etcdctl elect -l name` prints a baton leader's ID.
func (c *Client) election(name string) (*queuekit.Election, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	return queuekit.NewElection(backend{c}, name, c.queueOptions())
}

// Entries returns the raw keys under "<name>/" in create-revision order,
// including keys that are not entries of a recipe. It is meant for tests,
// inspection and orphan scans; name may be a directory a recipe derives
// from a lock name ("<name>/leases"), so it is checked with
// engine.ValidatePath. It is reached through baton.As.
func (c *Client) Entries(ctx context.Context, name string) ([]string, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	n, err := engine.ValidatePath(name)
	if err != nil {
		return nil, err
	}
	resp, err := c.cli.Get(ctx, n+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, opErr(ctx, "list", n, err)
	}
	keys := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys, nil
}

// close revokes every lease of the client (best effort, bounded by a couple
// of seconds when the server is unreachable) and waits for the client's
// goroutines. Leases still held become Lost. A client from baton.Open
// then closes the etcd client Open made; one from New leaves the caller's
// open. Later calls return baton.ErrClosed. The *baton.Client's Close
// calls it.
func (c *Client) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("etcdlock: close: %w", baton.ErrClosed)
	}
	c.closed = true
	all := make([]*session, 0, len(c.sessions))
	for s := range c.sessions {
		all = append(all, s)
	}
	c.mu.Unlock()
	for _, s := range all {
		s.close()
	}
	c.wg.Wait()
	if c.owned {
		return c.cli.Close()
	}
	return nil
}

func (c *Client) checkOpen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("etcdlock: %w", baton.ErrClosed)
	}
	return nil
}

// backend is the queuekit.Backend the client's recipes run on. It is a type
// of its own so that the engine plumbing stays off the Client's API.
type backend struct{ c *Client }

func (b backend) Engine() string { return "etcd" }

func (b backend) Session(ctx context.Context, dir string) (queuekit.Session, error) {
	return b.c.session(ctx, dir)
}

func (b backend) Done(s queuekit.Session, dir string) { b.c.done(s, dir) }

// session returns a lease on which a new entry in dir can live: a pooled
// one that has no entry in dir (two entries of one lease in one directory
// would share the key "<dir>/<lease>"), or a newly granted one. Grants are
// retried with backoff until ctx ends; the error then wraps
// baton.ErrUnavailable and ctx's error.
func (c *Client) session(ctx context.Context, dir string) (queuekit.Session, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("etcdlock: session: %w", baton.ErrClosed)
	}
	if s := c.pickLocked(dir); s != nil {
		s.busy[dir] = true
		c.mu.Unlock()
		return s, nil
	}
	c.mu.Unlock()

	s, err := c.grant(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.revoke(s.id)
		return nil, fmt.Errorf("etcdlock: session: %w", baton.ErrClosed)
	}
	c.sessions[s] = struct{}{}
	s.busy[dir] = true
	c.wg.Add(1)
	c.mu.Unlock()
	go s.run()
	return s, nil
}

// done tells the client the recipe no longer has an entry in dir on qs.
// The session becomes available for dir again once any abandoned entry
// there is cleaned up; an idle session beyond MaxIdleSessions is revoked.
func (c *Client) done(qs queuekit.Session, dir string) {
	s, ok := qs.(*session)
	if !ok || s.c != c {
		return
	}
	c.mu.Lock()
	delete(s.busy, dir)
	retire := c.settleLocked(s)
	c.mu.Unlock()
	if retire {
		s.close()
	}
}

// pickLocked returns a healthy pooled session free for dir, preferring the
// most recently used one so that surplus sessions go idle and retire.
func (c *Client) pickLocked(dir string) *session {
	var best *session
	for s := range c.sessions {
		if s.tainted || s.busy[dir] {
			continue
		}
		if _, ok := s.pending[dir]; ok {
			continue
		}
		if st, _ := s.Observe(); st != baton.Held {
			continue
		}
		if best == nil || s.idleSince.After(best.idleSince) {
			best = s
		}
	}
	return best
}

// settleLocked updates s's idle bookkeeping after its entries changed and
// reports whether s should be retired now (removed from the pool here).
func (c *Client) settleLocked(s *session) bool {
	if len(s.busy) > 0 || len(s.pending) > 0 {
		return false
	}
	if _, ok := c.sessions[s]; !ok {
		return false
	}
	s.idleSince = time.Now()
	if s.tainted || c.idleLocked() > MaxIdleSessions {
		delete(c.sessions, s)
		return true
	}
	return false
}

func (c *Client) idleLocked() int {
	n := 0
	for s := range c.sessions {
		if len(s.busy) == 0 && len(s.pending) == 0 {
			n++
		}
	}
	return n
}

// retireIdle removes s from the pool if it has been idle for longer than
// IdleSessionTimeout, and reports whether it did.
func (c *Client) retireIdle(s *session, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sessions[s]; !ok {
		return false
	}
	if len(s.busy) > 0 || len(s.pending) > 0 || now.Sub(s.idleSince) < IdleSessionTimeout {
		return false
	}
	delete(c.sessions, s)
	return true
}

func (c *Client) remove(s *session) {
	c.mu.Lock()
	delete(c.sessions, s)
	c.mu.Unlock()
}

// grant obtains a new lease, retrying with backoff until ctx ends. The send
// time of the Grant request starts the lease's clock: the server starts its
// own TTL later than that, so deadlines measured from it are safe.
func (c *Client) grant(ctx context.Context) (*session, error) {
	var s *session
	err := c.opts.Backoff.Retry(ctx, retryable, func(ctx context.Context) error {
		sent := time.Now()
		resp, err := c.cli.Grant(ctx, c.ttl)
		if err != nil {
			return err
		}
		if resp.TTL <= 0 {
			return fmt.Errorf("etcdlock: grant returned TTL %d", resp.TTL)
		}
		c.granted.Store(resp.TTL)
		s = newSession(c, resp.ID, time.Duration(resp.TTL)*time.Second, sent)
		return nil
	})
	if err == nil {
		return s, nil
	}
	if isAuth(err) {
		return nil, fmt.Errorf("etcdlock: grant lease: %w: %w", baton.ErrAuth, err)
	}
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return nil, fmt.Errorf("etcdlock: grant lease: %w: %w", baton.ErrUnavailable, err)
		}
		return nil, fmt.Errorf("etcdlock: grant lease: %w: %w: %w", baton.ErrUnavailable, err, cerr)
	}
	return nil, fmt.Errorf("etcdlock: grant lease: %w", err)
}

// revoke revokes a lease, best effort and bounded.
func (c *Client) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), revokeTimeout)
	defer cancel()
	_, _ = c.cli.Revoke(ctx, id) // the server expires it anyway
}

// retryable reports whether a failed grant may be retried: not after the
// context ended and not when the server refused the credentials.
func retryable(err error) bool {
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !isAuth(err)
}

func isAuth(err error) bool {
	for _, e := range []error{rpctypes.ErrPermissionDenied, rpctypes.ErrAuthFailed,
		rpctypes.ErrInvalidAuthToken, rpctypes.ErrUserEmpty, rpctypes.ErrAuthOldRevision} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// opErr wraps an operation's error, making sure it wraps ctx's error when
// ctx ended (clientv3 usually does, but not for every transport error).
func opErr(ctx context.Context, op, key string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("etcdlock: %s %q: %w: %w", op, key, err, cerr)
	}
	return fmt.Errorf("etcdlock: %s %q: %w", op, key, err)
}

// leaseHex formats a lease ID as etcdctl and concurrency.Mutex do in keys.
func leaseHex(id clientv3.LeaseID) string { return strconv.FormatInt(int64(id), 16) }
