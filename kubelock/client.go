package kubelock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// ErrBadCounter is wrapped by an acquire refused because the name's token
// counter (the baton.dev/token annotation) is not a decimal uint64:
// written by hand or by another program. Nothing was granted. Repair the
// annotation (a value above every token issued) before retrying.
var ErrBadCounter = errors.New("kubelock: token counter unreadable")

// Client is the Kubernetes engine behind a *baton.Client: one process's
// handle on the locks of one namespace, through the caller's Kubernetes
// clientset. It owns a keeper (see package keeper: two long-lived
// goroutines, plus one per renewal request in flight) and, while somebody
// waits or observes, one watch goroutine per lock name (watch.go); the
// *baton.Client's Close stops and releases them. Users reach it with
// baton.As[*kubelock.Client] for what only this engine has: Names.
type Client struct {
	leases coordclient.LeaseInterface
	ns     string
	o      Options
	proc   string // the holder record, encoded once (engine.ProcessData)
	// secrets are hidden from every error message (a bearer token that
	// Open read); a clientset's own errors do not quote them, but a
	// transport's might.
	secrets []string

	obs *observer
	hub *hub
	st  *store
	k   *keeper.Keeper
	eng *leasekit.Engine

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
}

// New returns a client on cs for the Leases of namespace, which must
// exist. cs stays the caller's: closing the returned client does not
// touch it. It does not touch the server. baton.As[*kubelock.Client] on
// it returns the engine's own Client.
func New(cs kubernetes.Interface, namespace string, o Options) (*baton.Client, error) {
	c, err := newClient(cs, namespace, o)
	if err != nil {
		return nil, err
	}
	return engine.NewClient(connOf(c)), nil
}

// newClient is New, returning the engine's own client.
func newClient(cs kubernetes.Interface, namespace string, o Options) (*Client, error) {
	if cs == nil {
		return nil, fmt.Errorf("%w: kubelock: nil clientset", baton.ErrInvalidOption)
	}
	if namespace == "" {
		return nil, fmt.Errorf("%w: kubelock: empty namespace", baton.ErrInvalidOption)
	}
	o, err := o.validate()
	if err != nil {
		return nil, err
	}
	c := &Client{leases: cs.CoordinationV1().Leases(namespace), ns: namespace, o: o,
		proc: engine.ProcessData(o.Process), obs: newObserver()}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.hub = newHub(c)
	c.st = &store{c: c}
	c.k, err = keeper.New(c.st, keeper.Options{TTL: o.TTL, DriftMargin: o.DriftMargin, Backoff: o.Backoff,
		Observer: o.Observer, Engine: "kube"})
	if err != nil {
		c.cancel()
		return nil, fmt.Errorf("kubelock: %w", err)
	}
	c.eng = &leasekit.Engine{
		Name: "kube", Pkg: "kubelock", Opts: o.common(), Keeper: c.k, Store: c.st,
		Ctx: c.ctx, Err: c.checkOpen, AttemptTimeout: o.TTL / 3, Millis: true,
	}
	return c, nil
}

// leaseName returns the name of the Lease that holds lock name (see
// objectName): the name itself when it is a valid object name, else a
// readable prefix and a hash.
func (c *Client) leaseName(name string) (string, error) {
	n, err := engine.ValidateName(name)
	if err != nil {
		return "", err
	}
	return objectName(n), nil
}

// checkOpen returns an error wrapping baton.ErrClosed after Close.
func (c *Client) checkOpen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("kubelock: %w", baton.ErrClosed)
	}
	return nil
}

// close ends every lease of the client (Lost, cause wrapping
// baton.ErrClosed), releases them on the server, stops the watches and
// the keeper. It does not touch the clientset. A second Close returns an
// error wrapping baton.ErrClosed. The *baton.Client's Close calls it.
func (c *Client) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("kubelock: %w", baton.ErrClosed)
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.hub.close()
	return c.k.Close()
}

// trace is what one modify saw of the server, for an attempt that
// failed: whether a write may have landed, and when the server last
// answered.
type trace struct {
	unknown  bool      // a write was sent and its answer never came
	answered time.Time // when the last answer came (zero: none)
	// sent is when the last write was sent: a grant's lease counts from
	// it, not from the attempt's start, which lost races may have made
	// long ago.
	sent time.Time
	// base, if set, is the Lease as a watch event just delivered it: the
	// first decision is made on it instead of a read (a conditional write
	// on a stale one only loses a race).
	base *coordv1.Lease
	// optional, set by decide, marks a write that may be skipped when it
	// loses a race (a waiter's refresh, made again at its next attempt):
	// it is not retried, leaving the Lease to the writes that must land.
	optional bool
}

// modify is every write of the engine: it reads lock's Lease, observes it
// (observe.go), lets decide say what to change in the view, and writes it
// back conditional on the resourceVersion it read (Update), or creates the
// Lease (Create) when there was none. A write that lost a race — Conflict,
// AlreadyExists, or NotFound when the Lease went away meanwhile — is no
// error: decide runs again on a fresh read, after a short jittered pause,
// until ctx ends, or, when races > 0, until that many writes lost
// (errRaced). decide returns whether to write. tr, if set, is told what
// the server answered.
func (c *Client) modify(ctx context.Context, lock string, races int, tr *trace, decide func(v *view, s *seen, now time.Time) (bool, error)) error {
	if tr == nil {
		tr = &trace{}
	}
	name := objectName(lock)
	for try := 0; ; try++ {
		var (
			cur *coordv1.Lease
			err error
		)
		if cur, tr.base = tr.base, nil; cur == nil {
			cur, err = c.leases.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				cur, err = nil, nil
			}
			if err != nil {
				return c.classify("get", name, err)
			}
		}
		now := time.Now()
		tr.answered, tr.optional = now, false
		v, err := decode(lock, cur)
		if err != nil {
			return leasekit.Permanent(err)
		}
		write, err := decide(v, c.obs.observe(v, now), now)
		if err != nil || !write {
			return err
		}
		next, err := v.encode(name, c.ns, now)
		if err != nil {
			return leasekit.Permanent(err)
		}
		verb := "update"
		tr.unknown, tr.sent = true, time.Now()
		if cur == nil {
			verb = "create"
			_, err = c.leases.Create(ctx, next, metav1.CreateOptions{FieldManager: managedBy})
		} else {
			_, err = c.leases.Update(ctx, next, metav1.UpdateOptions{FieldManager: managedBy})
		}
		var status apierrors.APIStatus
		if err == nil || errors.As(err, &status) {
			// The server answered: the write landed, or it did not.
			tr.unknown, tr.answered = false, time.Now()
		}
		if err == nil {
			return nil
		}
		if !raced(err) {
			return c.classify(verb, name, err)
		}
		if races > 0 && try+1 >= races || tr.optional {
			return errRaced
		}
		if err := pause(ctx, try); err != nil {
			return err
		}
	}
}

// errRaced is modify's error when its writes lost every race it was
// allowed: the server answered, and other writers got there first.
var errRaced = errors.New("kubelock: other writers won every race for the Lease")

// raced reports a conditional write that lost to another writer.
func raced(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

// pause sleeps a little before the retry after the try-th lost race:
// jittered, growing to 50ms, so that racing writers spread out.
func pause(ctx context.Context, try int) error {
	d := time.Duration(rand.Int64N(int64(min(time.Millisecond<<min(try, 6), 50*time.Millisecond)) + 1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// classify marks an API error: a refused identity (401), a missing
// permission (403) or a refused certificate (tlsRefused) wraps
// baton.ErrAuth, and is final (the apiserver's
// message names the verb and the resource: `leases.coordination.k8s.io
// "x" is forbidden: User "u" cannot update resource "leases" …`); a
// request the server refused as invalid is final too; anything else —
// a connection refused or cut, a timeout, a 5xx, 429 — wraps
// baton.ErrUnavailable and is retried. The context's own end is returned
// as it is.
func (c *Client) classify(verb, name string, err error) error {
	err = engine.Scrub(err, c.secrets...)
	switch {
	case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) || tlsRefused(err):
		return leasekit.Permanent(fmt.Errorf("%w: %s Lease %s/%s: %w", baton.ErrAuth, verb, c.ns, name, err))
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsRequestEntityTooLargeError(err):
		return leasekit.Permanent(fmt.Errorf("%s Lease %s/%s: %w", verb, c.ns, name, err))
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s Lease %s/%s: %w", verb, c.ns, name, err)
	}
	return fmt.Errorf("%w: %s Lease %s/%s: %w", baton.ErrUnavailable, verb, c.ns, name, err)
}
