package redlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/internal/rediseval"
)

// batonConn is a Client as package engine drives it, the Conn behind the
// *baton.Client New and Open return, for the mutex: its RWMutex, Semaphore
// and Election fail with an error wrapping baton.ErrInvalidOption. baton.As
// hands c back, for Stats and Verify.
type batonConn struct {
	c *Client
	// closeNodes closes the nodes' clients that Open made for c; nil when
	// the caller owns them.
	closeNodes func() error
}

func (k batonConn) Engine() string { return "redlock" }
func (k batonConn) Raw() any       { return k.c }

// Close closes the client, then the nodes' clients Open made for it.
func (k batonConn) Close() error {
	err := k.c.close()
	if k.closeNodes == nil || errors.Is(err, baton.ErrClosed) {
		return err
	}
	return errors.Join(err, k.closeNodes())
}

func (k batonConn) Mutex(name string) (baton.Locker, error) {
	return engine.Recipe[baton.Locker](k.c.mutex(name))
}

func (k batonConn) RWMutex(string) (engine.RWLocker, error) {
	return nil, onlyMutex("read/write locks")
}

func (k batonConn) Semaphore(string, int) (engine.SemLocker, error) {
	return nil, onlyMutex("semaphores")
}

func (k batonConn) Election(string) (baton.Elector, error) { return nil, onlyMutex("elections") }

// onlyMutex is the error of a recipe Redlock does not have.
func onlyMutex(what string) error {
	return fmt.Errorf("%w: redlock: Redlock has only the mutex, no %s: the quorum fencing token proves the order "+
		"of one holder after another, not of several at once", baton.ErrInvalidOption, what)
}

// waitingNote explains a waiter's entry: an intent the waiter refreshes at
// every attempt, not a place it keeps by itself.
const waitingNote = "waiting intent: expires unless the waiter retries"

// holding is what the nodes that answered hold for one owner.
type holding struct {
	nodes   int
	token   uint64 // the quorum token (without TokenFloor), once a node records it
	process baton.Process
	lefts   []time.Duration
}

// Inspect reads every node (Client.inspect) as one baton.Inspection: the
// owner a majority of the nodes holds is the holder, its Left the time
// until fewer than a majority hold it; an owner on fewer nodes (an attempt
// that failed, a lock expiring) is listed in Other; the waiters the nodes
// list come in arrival order, the order the releases wake them. It needs
// a majority of the nodes to answer (else an error wrapping
// baton.ErrUnavailable, or baton.ErrAuth when a node refused); the others
// are named in Notes. A holder's Token is 0 until its first renewal
// (TTL/3 after the grant), when the nodes record it (see inspect).
func (k batonConn) Inspect(ctx context.Context, name string) (baton.Inspection, error) {
	es, err := k.c.inspect(ctx, name)
	if err != nil {
		return baton.Inspection{}, err
	}
	out := baton.Inspection{Name: name, Engine: "redlock"}
	held := map[string]*holding{}
	waiters := map[string]waiter{}
	var errs []error
	for _, e := range es {
		if e.Err != nil {
			errs = append(errs, e.Err)
			out.Notes = append(out.Notes, e.Err.Error())
			continue
		}
		for _, w := range e.Waiters {
			if cur, ok := waiters[w.ID]; !ok || w.Left > cur.Left {
				waiters[w.ID] = w
			}
		}
		if e.Owner == "" {
			continue
		}
		h := held[e.Owner]
		if h == nil {
			h = &holding{process: e.Process}
			held[e.Owner] = h
		}
		h.nodes++
		h.token = max(h.token, e.Grant)
		h.lefts = append(h.lefts, e.TTLLeft)
	}
	if answered := len(es) - len(errs); answered < k.c.maj {
		return baton.Inspection{}, rediseval.Classify(fmt.Errorf("redlock: inspect %q: %d of %d nodes answered, want ≥ %d: %w",
			name, answered, len(es), k.c.maj, errors.Join(errs...)))
	}
	for _, owner := range slices.Sorted(maps.Keys(held)) {
		be, err := k.entry(owner, held[owner], len(es))
		if err != nil {
			return baton.Inspection{}, fmt.Errorf("redlock: inspect %q: %w", name, err)
		}
		if held[owner].nodes >= k.c.maj {
			out.Holders = append(out.Holders, be)
		} else {
			out.Other = append(out.Other, be)
		}
	}
	ws := slices.SortedFunc(maps.Values(waiters), func(a, b waiter) int {
		return cmp.Or(a.Arrival.Compare(b.Arrival), cmp.Compare(a.ID, b.ID))
	})
	for _, w := range ws {
		out.Waiters = append(out.Waiters, baton.Entry{Mode: "mutex", Owner: w.ID, Left: w.Left, Note: waitingNote})
	}
	return out, nil
}

// entry is owner's entry, held on h.nodes of n nodes: a holder's Left is
// the time until fewer than a majority hold it; a minority's, until the
// last of its keys expires.
func (k batonConn) entry(owner string, h *holding, n int) (baton.Entry, error) {
	be := baton.Entry{Mode: "mutex", Owner: owner, Process: h.process}
	if h.token > 0 {
		tok, ok := leasekit.Token(h.token, k.c.o.TokenFloor)
		if !ok {
			return be, fmt.Errorf("%w: token %d + TokenFloor %d overflows uint64", baton.ErrInvalidOption, h.token, k.c.o.TokenFloor)
		}
		be.Token = tok
	}
	slices.SortFunc(h.lefts, func(a, b time.Duration) int { return cmp.Compare(b, a) })
	if h.nodes >= k.c.maj {
		be.Left = h.lefts[k.c.maj-1]
		be.Note = fmt.Sprintf("held on %d of %d nodes", h.nodes, n)
		if h.token == 0 {
			be.Note += "; the nodes record its token at its first renewal"
		}
		return be, nil
	}
	be.Left = h.lefts[0]
	be.Note = fmt.Sprintf("on %d of %d nodes, below the majority of %d: an attempt that failed or a lock expiring", h.nodes, n, k.c.maj)
	return be, nil
}
