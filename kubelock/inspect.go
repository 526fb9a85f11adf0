package kubelock

import (
	"context"
	"fmt"
	"slices"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
)

// leaseEntry is one holder or waiter of a lock name as inspect reads it.
type leaseEntry struct {
	Lease   string // the Lease's name
	Kind    string // "mutex", "read", "write", "permit" or "leader"; "foreign" for a holder not baton's
	Waiting bool   // a waiter's intent, not a holder
	Owner   string // the grant's owner (a foreign holder's holderIdentity); a waiter's id
	// Token is a holder's fencing token, TokenFloor included; a waiter's
	// ticket, its place in the queue.
	Token uint64
	ID    string // a leader's candidate ID
	N     int    // a permit's semaphore N
	// Process is the holder record the grant stored (Options.Process).
	Process baton.Process
	// Age is how long ago the entry was written first, on its writer's
	// clock (an offset between the clocks shows here, and nowhere else).
	Age time.Duration
	// Left is how long its lease has left as this client judges it:
	// TTL after this client first saw its last renewal.
	Left    time.Duration
	Expired bool // its lease ran out as this client judges it
	Foreign bool // a holderIdentity baton did not write
}

// leaseInspection is what inspect reads about one lock name.
type leaseInspection struct {
	Name    string
	Leases  []string     // the name's Leases (one, unless names collided)
	Entries []leaseEntry // holders first, then waiters in the order they are served
	// Permits is the N stored by a semaphore's live holders, 0 when none
	// is held.
	Permits int
	Notes   []string
}

// inspectNote says how Left is judged.
const inspectNote = "time left counts from when this client first saw each entry's last renewal " +
	"(client-go's rule: no clock of another machine is read), so an entry seen for the first time has its whole lease left"

// mutexNote says why a mutex shows no waiters.
const mutexNote = "mutex waiters keep no intent on Kubernetes (they race for the Lease at each release), so they are not listed"

// inspect reads every Lease of name — those labelled with its hash, and
// the one its name maps to — and lists their holders and waiters. It
// changes nothing. Errors wrap baton.ErrAuth when the server refused the
// read, else baton.ErrUnavailable.
func (c *Client) inspect(ctx context.Context, name string) (leaseInspection, error) {
	n, err := engine.ValidateName(name)
	if err != nil {
		return leaseInspection{}, err
	}
	list, err := c.leases.List(ctx, metav1.ListOptions{LabelSelector: labelLock + "=" + nameHash(n)})
	if err != nil {
		return leaseInspection{}, fmt.Errorf("kubelock: inspect %q: %w", n, c.classify("list", objectName(n), err))
	}
	objs := list.Items
	if !slices.ContainsFunc(objs, func(l coordv1.Lease) bool { return l.Name == objectName(n) }) {
		// An unlabelled Lease of the same name: client-go's, before baton
		// wrote it.
		got, err := c.leases.Get(ctx, objectName(n), metav1.GetOptions{})
		switch {
		case err == nil:
			objs = append(objs, *got)
		case !apierrors.IsNotFound(err):
			return leaseInspection{}, fmt.Errorf("kubelock: inspect %q: %w", n, c.classify("get", objectName(n), err))
		}
	}
	in := leaseInspection{Name: n, Notes: []string{inspectNote, mutexNote}}
	for i := range objs {
		if err := c.inspectLease(&in, n, &objs[i]); err != nil {
			return leaseInspection{}, fmt.Errorf("kubelock: inspect %q: %w", n, err)
		}
	}
	slices.SortStableFunc(in.Entries, func(a, b leaseEntry) int {
		switch {
		case a.Waiting != b.Waiting && !a.Waiting:
			return -1
		case a.Waiting != b.Waiting:
			return 1
		case a.Token < b.Token:
			return -1
		case a.Token > b.Token:
			return 1
		}
		return 0
	})
	return in, nil
}

// inspectLease adds one Lease's entries to in.
func (c *Client) inspectLease(in *leaseInspection, lock string, obj *coordv1.Lease) error {
	v, err := decode(lock, obj)
	if err != nil {
		return err
	}
	now := time.Now()
	seen := c.obs.observe(v, now)
	in.Leases = append(in.Leases, obj.Name)
	if id := v.foreign(); id != "" {
		until := seen.specExpiry(obj, now)
		e := leaseEntry{Lease: obj.Name, Kind: "foreign", Owner: id, Foreign: true,
			Left: max(until.Sub(now), 0), Expired: !now.Before(until)}
		if obj.Spec.AcquireTime != nil {
			e.Age = max(now.Sub(obj.Spec.AcquireTime.Time), 0)
		}
		in.Entries = append(in.Entries, e)
	}
	for _, part := range []struct {
		es      []entry
		waiting bool
	}{{v.st.Holders, false}, {v.st.Waiters, true}} {
		for i := range part.es {
			e := &part.es[i]
			until := seen.expiry(e, now)
			out := leaseEntry{Lease: obj.Name, Kind: e.Kind, Waiting: part.waiting, Owner: e.Owner, Token: e.Token,
				ID: e.ID, N: e.N, Process: engine.ParseProcess(e.Proc),
				Left: max(until.Sub(now), 0), Expired: !now.Before(until)}
			if e.Since > 0 {
				out.Age = max(now.Sub(time.UnixMilli(e.Since)), 0)
			}
			if !part.waiting {
				tok, ok := leasekit.Token(e.Token, c.o.TokenFloor)
				if !ok {
					return fmt.Errorf("%w: token %d + TokenFloor %d overflows uint64", baton.ErrInvalidOption, e.Token, c.o.TokenFloor)
				}
				out.Token = tok
				if e.Kind == kindPermit && !out.Expired {
					in.Permits = e.N
				}
			}
			in.Entries = append(in.Entries, out)
		}
	}
	return nil
}

// entries lists the live entries of name as "kind/role/owner", for tests
// and tools.
func (c *Client) entries(ctx context.Context, name string) ([]string, error) {
	in, err := c.inspect(ctx, name)
	if err != nil {
		return nil, err
	}
	var es []string
	for _, e := range in.Entries {
		if e.Expired {
			continue
		}
		role := "holder"
		if e.Waiting {
			role = "waiting"
		}
		es = append(es, e.Kind+"/"+role+"/"+e.Owner)
	}
	return es, nil
}
