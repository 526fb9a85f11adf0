package sqllock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/baton-go/baton"
)

// MaxCandidateID is the longest candidate ID (in bytes) an Election
// stores: the data column is VARCHAR(1024) on MySQL.
const MaxCandidateID = 1024

// Election is leader election on the rows of one name (see recipe.go).
// The leader holds a row of kind "leader"; every other candidate keeps an
// intent row ("cwait") and candidates lead in the order they started
// campaigning. Each row stores its candidate's ID, which Leader and
// Observe report.
//
// Leadership is a lease on the keeper, like a lock: its context is
// cancelled when leadership is lost, and its token is the leadership's
// epoch, strictly greater than every earlier leader's (it comes from the
// database's sequence under the name's guard row). Commit work with the
// epoch so that a deposed leader's late writes are rejected (package
// fence, task tables). A lost leader is never leader again under that
// row: campaign again for a new epoch.
//
// Observe polls the table every ObservePeriod (and at once when a
// release of the name is seen: a LISTEN/NOTIFY wake-up on PostgreSQL, or a
// release in this process), so a change of leader is reported within
// about one period.
type Election struct {
	c *Client
	r recipe
}

var _ baton.Elector = (*Election)(nil)

// Election returns the election called name. An invalid name fails with
// an error wrapping baton.ErrInvalidName.
func (c *Client) Election(name string) (*Election, error) {
	n, err := baton.ValidateName(name)
	if err != nil {
		return nil, fmt.Errorf("sqllock: Election: %w", err)
	}
	return &Election{c: c, r: recipe{name: n, what: "election", kind: kindLeader, waitKind: kindCandidate,
		grant: func(others []recipeRow, ticket uint64) bool { return exclusiveGrant(others, ticket, kindCandidate) }}}, nil
}

// Name returns the normalised election name.
func (e *Election) Name() string { return e.r.name }

// ObservePeriod is how often Observe reads the election: TTL/4, within
// [100ms, 1s]. A leader that dies is replaced within about a TTL, so
// polling faster would only cost queries.
func (e *Election) ObservePeriod() time.Duration {
	return min(max(e.c.o.TTL/4, 100*time.Millisecond), time.Second)
}

// Campaign blocks until this candidate leads or ctx ends, with
// baton.DefaultID() as its ID. On ctx's end its intent row is released.
func (e *Election) Campaign(ctx context.Context) (*baton.Leader, error) {
	return e.CampaignAs(ctx, baton.DefaultID())
}

// CampaignAs is Campaign with the candidate ID id (at most MaxCandidateID
// bytes; longer fails with an error wrapping baton.ErrInvalidOption).
func (e *Election) CampaignAs(ctx context.Context, id string) (*baton.Leader, error) {
	if len(id) > MaxCandidateID {
		return nil, fmt.Errorf("%w: sqllock: election %q: candidate ID of %d bytes, want ≤ %d", baton.ErrInvalidOption, e.r.name, len(id), MaxCandidateID)
	}
	r := e.r
	r.data = id
	l, err := e.c.acquireRecipe(ctx, &r, true)
	if err != nil {
		return nil, err
	}
	return baton.NewLeader(l, id), nil
}

// Leader returns the current leader as the database sees it now, or an
// error wrapping baton.ErrNoLeader. Entry is "<name>/<slot>", Session the
// leadership's owner value (unique to the leadership), ID the candidate's
// ID.
func (e *Election) Leader(ctx context.Context) (baton.Candidate, error) {
	if err := e.c.checkOpen(); err != nil {
		return baton.Candidate{}, err
	}
	if err := e.c.ensureSchema(ctx); err != nil {
		return baton.Candidate{}, err
	}
	rows, err := e.c.st.readRecipeRows(ctx, e.c.db, e.r.name)
	if err != nil {
		return baton.Candidate{}, fmt.Errorf("sqllock: election %q: %w", e.r.name, err)
	}
	for _, r := range rows {
		if r.live && r.kind == kindLeader {
			return baton.Candidate{Entry: e.r.name + "/" + strconv.FormatInt(r.slot, 10), Session: r.owner, ID: r.data}, nil
		}
	}
	return baton.Candidate{}, fmt.Errorf("sqllock: election %q: %w", e.r.name, baton.ErrNoLeader)
}

// Observe sends the leader (an empty Candidate while there is none), then
// each change, until ctx ends, the client closes, or the database stays
// unreadable for a TTL; then it closes the channel. The goroutine it
// starts is owned by ctx (and the client).
func (e *Election) Observe(ctx context.Context) (<-chan baton.Candidate, error) {
	if err := e.c.checkOpen(); err != nil {
		return nil, err
	}
	if err := e.c.ensureSchema(ctx); err != nil {
		return nil, err
	}
	out := make(chan baton.Candidate)
	period := e.ObservePeriod()
	go func() {
		defer close(out)
		var (
			last   baton.Candidate
			first  = true
			lastOK = time.Now()
		)
		for {
			woke, unwatch := e.c.hub().watch(e.r.name)
			cur, err := e.Leader(ctx)
			switch {
			case err == nil || isNoLeader(err):
				lastOK = time.Now()
				if first || cur != last {
					select {
					case out <- cur:
					case <-ctx.Done():
						unwatch()
						return
					case <-e.c.closing:
						unwatch()
						return
					}
					last, first = cur, false
				}
			case ctx.Err() != nil || e.c.checkOpen() != nil || time.Since(lastOK) >= e.c.o.TTL:
				unwatch()
				return
			}
			t := time.NewTimer(period)
			select {
			case <-ctx.Done():
			case <-e.c.closing:
			case <-woke:
			case <-t.C:
			}
			t.Stop()
			unwatch()
			if ctx.Err() != nil || e.c.checkOpen() != nil {
				return
			}
		}
	}()
	return out, nil
}

func isNoLeader(err error) bool { return errors.Is(err, baton.ErrNoLeader) }
