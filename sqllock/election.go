package sqllock

import (
	"context"
	"fmt"
	"strconv"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/leasekit"
)

// maxCandidateID is the longest candidate ID (in bytes) an election
// stores: the data column is VARCHAR(1024) on MySQL.
const maxCandidateID = 1024

// election is leader election on the rows of one name (see recipe.go).
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
// Leader and Observe read the leader row. Observe polls the table every
// ObservePeriod (and at once when a release of the name is seen: a
// LISTEN/NOTIFY wake-up on PostgreSQL, or a release in this process), so
// a change of leader is reported within about one period.
type election struct{ *leasekit.Election }

var _ baton.Elector = (*election)(nil)

// election returns the election called name. An invalid name fails with
// an error wrapping baton.ErrInvalidName.
func (c *Client) election(name string) (*election, error) {
	e, err := c.eng.Election(name)
	if err != nil {
		return nil, err
	}
	return &election{e}, nil
}

// Campaign blocks until this candidate leads or ctx ends, with
// baton.DefaultID() as its ID. On ctx's end its intent row is released.
func (e *election) Campaign(ctx context.Context) (*baton.Leader, error) {
	return e.CampaignAs(ctx, baton.DefaultID())
}

// CampaignAs is Campaign with the candidate ID id (at most 1024 bytes,
// maxCandidateID; longer fails with an error wrapping
// baton.ErrInvalidOption).
func (e *election) CampaignAs(ctx context.Context, id string) (*baton.Leader, error) {
	if len(id) > maxCandidateID {
		return nil, leasekit.Invalid("sqllock", "election %q: candidate ID of %d bytes, want ≤ %d", e.Name(), len(id), maxCandidateID)
	}
	return e.Election.CampaignAs(ctx, id)
}

// Leader reads the leader row of name: Entry is "<name>/<slot>/<owner>"
// (a slot is reused by later leaderships, the owner value is unique to
// this one), Session the owner value, ID the candidate's ID.
func (s *store) Leader(ctx context.Context, name string) (baton.Candidate, error) {
	rows, err := s.readRecipeRows(ctx, s.db, name)
	if err != nil {
		return baton.Candidate{}, fmt.Errorf("sqllock: election %q: %w", name, err)
	}
	for _, r := range rows {
		if r.live && r.kind == kindLeader {
			return baton.Candidate{Entry: name + "/" + strconv.FormatInt(r.slot, 10) + "/" + r.owner, Session: r.owner, ID: r.data}, nil
		}
	}
	return baton.Candidate{}, fmt.Errorf("sqllock: election %q: %w", name, baton.ErrNoLeader)
}
