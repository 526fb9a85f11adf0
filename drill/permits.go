package drill

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"github.com/baton-go/baton"
)

// Operations of a Permits resource. A holder enters once after its grant,
// then uses the resource (OpWrite) any number of times, and leaves when it
// releases its permit.
const (
	OpEnter = "enter" // admission of a grant at a Permits resource
	OpLeave = "leave" // the grant gives its place back
)

// Permits is the resource of a semaphore drill: something at most N
// holders may work on at once (N workers of a pool, N connections of a
// licence). A single fencing token cannot guard it — N holders are
// legitimately concurrent, and a fence that only admits the highest token
// would reject all but one — so the fenced Permits keeps an admission
// table of at most N grants: a grant enters with its (token, owner); when
// the table is full, the entry with the smallest token is evicted if the
// newcomer's token is larger, and the newcomer is rejected as stale
// otherwise. Every use checks, in the same transaction as its write, that
// the grant is still admitted. A semaphore hands out tokens in grant order,
// so a holder whose permit expired is the oldest entry when its successor
// enters and is the one evicted; its late uses are rejected. (The scheme is
// safe, never more than N admitted, but not exact: if a dead grant held a
// larger token than a live one, the live one would be evicted instead —
// rejected, never doubled.)
//
// The unfenced Permits admits every enter and use: the negative control,
// which shows N+1 concurrent holders as soon as a holder whose permit
// expired keeps working.
//
// Rows live in tables drill_permits (the admission table) and
// drill_permit_uses (one row per accepted use: a real write).
type Permits struct {
	DB     *sql.DB
	Name   string // the resource key; also the Name of its events
	N      int
	Fenced bool
}

// NewPermits creates the tables if needed and empties the resource's
// admission table. It speaks SQLite (the drills' resource database).
func NewPermits(ctx context.Context, db *sql.DB, name string, n int, fenced bool) (*Permits, error) {
	p := &Permits{DB: db, Name: name, N: n, Fenced: fenced}
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS drill_permits (resource TEXT NOT NULL, owner TEXT NOT NULL, token BIGINT NOT NULL, PRIMARY KEY (resource, owner))`,
		`CREATE TABLE IF NOT EXISTS drill_permit_uses (resource TEXT NOT NULL, owner TEXT NOT NULL, token BIGINT NOT NULL)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("drill: create permits tables: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM drill_permits WHERE resource = ?`, name); err != nil {
		return nil, fmt.Errorf("drill: reset permits: %w", err)
	}
	return p, nil
}

// OpenPermits returns the existing resource name on db without resetting
// it (a child process joining its parent's drill).
func OpenPermits(db *sql.DB, name string, n int, fenced bool) *Permits {
	return &Permits{DB: db, Name: name, N: n, Fenced: fenced}
}

func stale(format string, args ...any) error {
	return fmt.Errorf("drill: "+format+": %w", append(args, baton.ErrStaleToken)...)
}

// Enter admits the grant (token, owner), evicting the oldest admitted grant
// when the table is full and it is older than this one.
func (p *Permits) Enter(ctx context.Context, token uint64, owner string) error {
	if !p.Fenced {
		return nil
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM drill_permits WHERE resource = ? AND owner = ? AND token = ?`, p.Name, owner, int64(token)).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil // entered before: idempotent
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM drill_permits WHERE resource = ?`, p.Name).Scan(&n); err != nil {
			return err
		}
		if n >= p.N {
			var oldOwner string
			var oldToken int64
			if err := tx.QueryRowContext(ctx, `SELECT owner, token FROM drill_permits WHERE resource = ? ORDER BY token ASC LIMIT 1`, p.Name).Scan(&oldOwner, &oldToken); err != nil {
				return err
			}
			if uint64(oldToken) >= token {
				return stale("%s (all %d places held by tokens ≥ %d)", p.Name, p.N, oldToken)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM drill_permits WHERE resource = ? AND owner = ?`, p.Name, oldOwner); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO drill_permits (resource, owner, token) VALUES (?, ?, ?)`, p.Name, owner, int64(token))
		return err
	})
}

// Use writes one unit of work as the grant (token, owner); fenced, it is
// rejected with baton.ErrStaleToken unless the grant is still admitted.
func (p *Permits) Use(ctx context.Context, token uint64, owner string) error {
	return p.tx(ctx, func(tx *sql.Tx) error {
		if p.Fenced {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM drill_permits WHERE resource = ? AND owner = ? AND token = ?`, p.Name, owner, int64(token)).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return stale("%s (grant %d %s no longer admitted)", p.Name, token, owner)
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO drill_permit_uses (resource, owner, token) VALUES (?, ?, ?)`, p.Name, owner, int64(token))
		return err
	})
}

// Leave gives the grant's place back (a no-op when it was evicted).
func (p *Permits) Leave(ctx context.Context, token uint64, owner string) error {
	if !p.Fenced {
		return nil
	}
	_, err := p.DB.ExecContext(ctx, `DELETE FROM drill_permits WHERE resource = ? AND owner = ? AND token = ?`, p.Name, owner, int64(token))
	return err
}

func (p *Permits) tx(ctx context.Context, fn func(*sql.Tx) error) (err error) {
	tx, err := p.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// recorded runs f as op by client in rec.
func (p *Permits) recorded(ctx context.Context, rec *Recorder, op, client string, token uint64, owner string, f func(context.Context, uint64, string) error) error {
	o := rec.BeginValue(client, op, p.Name, token, owner, nil)
	err := f(ctx, token, owner)
	complete(o, err, nil)
	return err
}

// RecordedEnter is Enter with its invoke and completion in rec.
func (p *Permits) RecordedEnter(ctx context.Context, rec *Recorder, client string, token uint64, owner string) error {
	return p.recorded(ctx, rec, OpEnter, client, token, owner, p.Enter)
}

// RecordedUse is Use with its invoke and completion in rec.
func (p *Permits) RecordedUse(ctx context.Context, rec *Recorder, client string, token uint64, owner string) error {
	return p.recorded(ctx, rec, OpWrite, client, token, owner, p.Use)
}

// RecordedLeave is Leave with its invoke and completion in rec.
func (p *Permits) RecordedLeave(ctx context.Context, rec *Recorder, client string, token uint64, owner string) error {
	return p.recorded(ctx, rec, OpLeave, client, token, owner, p.Leave)
}

// Occupancy is the time a grant demonstrably worked at a Permits resource:
// from the return of its accepted enter to the send of its last accepted
// use. Both ends are inside the true interval in which the resource
// admitted the grant, so occupancies that overlap here overlapped there.
type Occupancy struct {
	Client string
	Token  uint64
	Owner  string
	From   int64 // T of the accepted enter's ok
	To     int64 // T of the last accepted use's invoke
	Uses   int   // accepted uses
}

// Occupancies extracts the occupancy of every grant that entered resource
// and had at least one use accepted after it.
func Occupancies(events []Event, resource string) []Occupancy {
	type key struct {
		client string
		id     int64
	}
	type grant struct {
		client, owner string
		token         uint64
	}
	inv := map[key]Event{}
	occ := map[grant]*Occupancy{}
	var order []grant
	for _, e := range events {
		if e.Name != resource || (e.Op != OpEnter && e.Op != OpWrite) {
			continue
		}
		k := key{e.Client, e.ID}
		if e.Phase == Invoke {
			inv[k] = e
			continue
		}
		i, ok := inv[k]
		if !ok || e.Phase != Ok {
			continue
		}
		g := grant{e.Client, i.Entry, i.Token}
		o := occ[g]
		switch e.Op {
		case OpEnter:
			if o == nil {
				o = &Occupancy{Client: g.client, Token: g.token, Owner: g.owner, From: e.T}
				occ[g] = o
				order = append(order, g)
			}
		case OpWrite:
			if o != nil && i.T > o.From {
				o.To = max(o.To, i.T)
				o.Uses++
			}
		}
	}
	var out []Occupancy
	for _, g := range order {
		if o := occ[g]; o.Uses > 0 {
			out = append(out, *o)
		}
	}
	return out
}

// CheckOccupancy checks I1 for a resource shared by at most n holders (a
// semaphore with n permits): at no moment do more than n grants occupy it.
// It is a pure function of the history; a history without any occupancy is
// an error (a check that saw nothing proves nothing).
func CheckOccupancy(events []Event, resource string, n int) ([]Violation, error) {
	occ := Occupancies(events, resource)
	if len(occ) == 0 {
		return nil, fmt.Errorf("%w: no accepted use of %q", errNoEvents, resource)
	}
	type edge struct {
		t     int64
		delta int
		who   string
	}
	var edges []edge
	for _, o := range occ {
		if o.To <= o.From {
			continue // one use sent before the enter returned: no span to count
		}
		who := fmt.Sprintf("%s (token %d)", o.Client, o.Token)
		edges = append(edges, edge{o.From, +1, who}, edge{o.To, -1, who})
	}
	// Ends sort before starts at the same instant: touching is not overlap.
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].t != edges[j].t {
			return edges[i].t < edges[j].t
		}
		return edges[i].delta < edges[j].delta
	})
	var vs []Violation
	active := map[string]bool{}
	for _, e := range edges {
		if e.delta < 0 {
			delete(active, e.who)
			continue
		}
		active[e.who] = true
		if len(active) > n {
			var names []string
			for w := range active {
				names = append(names, w)
			}
			sort.Strings(names)
			vs = append(vs, Violation{"I1", fmt.Sprintf("%q: %d holders at once, at most %d allowed: %v", resource, len(active), n, names)})
		}
	}
	return vs, nil
}

// CheckHolders is CheckExclusive for a lock with n holders at once (a
// semaphore with n permits; n = 1 is CheckExclusive): whenever a client is
// granted name, fewer than n other grants of it may still be claimed by
// holders that have not been told Suspended or Lost (I7).
func CheckHolders(events []Event, name string, n int) []Violation {
	var vs []Violation
	gs := Grants(events, name)
	for j, b := range gs {
		var others []string
		for _, a := range gs[:j] {
			if a.Client == b.Client && a.Token == b.Token {
				continue
			}
			claimed := a.Until == 0 || a.Until > b.At
			if claimed && (a.Told == 0 || a.Told > b.At) {
				others = append(others, fmt.Sprintf("%s (token %d)", a.Client, a.Token))
			}
		}
		if len(others) >= n {
			vs = append(vs, Violation{"I7", fmt.Sprintf("%q: %s granted (token %d) at %s while %v still held it untold; at most %d holders",
				name, b.Client, b.Token, rel(events, b.At), others, n)})
		}
	}
	return vs
}

// IsStale reports whether err is a fence's rejection.
func IsStale(err error) bool { return errors.Is(err, baton.ErrStaleToken) }
