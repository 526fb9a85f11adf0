package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
)

// ordersTable creates a business table (id, status) without fence
// columns, adds them with Row.Migrate (twice: it must be idempotent) and
// drops the table when the test ends.
func ordersTable(t *testing.T, b backend) fence.Row {
	t.Helper()
	ctx := t.Context()
	name := "fence_orders_" + engine.NewOwnerID()[:12]
	idType := "TEXT"
	if b.table.Dialect == fence.MySQL {
		idType = "VARCHAR(64)"
	}
	if _, err := b.db.ExecContext(ctx, `CREATE TABLE `+name+` (id `+idType+` PRIMARY KEY, status TEXT NOT NULL)`); err != nil {
		t.Fatalf("create %s = %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := b.db.ExecContext(context.Background(), `DROP TABLE IF EXISTS `+name); err != nil {
			t.Errorf("DROP TABLE %s = %v", name, err)
		}
	})
	r := fence.Row{Table: name, Dialect: b.table.Dialect}
	for range 2 {
		if err := r.Migrate(ctx, b.db); err != nil {
			t.Fatalf("Row{%s}.Migrate = %v", name, err)
		}
	}
	return r
}

// rowUpdate runs one fenced (or unfenced) row update in its own
// transaction, committing only when it succeeds.
func rowUpdate(ctx context.Context, db *sql.DB, update func(context.Context, *sql.Tx, []fence.Column, []fence.Column, uint64, string) error, id, status string, token uint64, owner string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	key := []fence.Column{{Name: "id", Value: id}}
	if err := update(ctx, tx, key, []fence.Column{{Name: "status", Value: status}}, token, owner); err != nil {
		return err
	}
	return tx.Commit()
}

func status(t *testing.T, b backend, r fence.Row, id string) string {
	t.Helper()
	var s string
	if err := b.db.QueryRowContext(t.Context(), `SELECT status FROM `+quote(b.table.Dialect, r.Table)+` WHERE id = `+ph(b.table.Dialect, 1), id).Scan(&s); err != nil {
		t.Fatalf("read status of %q = %v", id, err)
	}
	return s
}

// TestRowRule runs the rule's cases through the token columns of a
// business row (scheme 1), on rows that exist but were never fenced.
func TestRowRule(t *testing.T) {
	cases := []struct {
		name      string
		before    *stored // nil: the row exists, fence columns NULL
		token     uint64
		owner     string
		wantStale bool
	}{
		{name: "first write", token: 7, owner: "a"},
		{name: "first write with token 0", token: 0, owner: "a"},
		{name: "higher token", before: &stored{5, "a"}, token: 6, owner: "b"},
		{name: "equal token same owner", before: &stored{5, "a"}, token: 5, owner: "a"},
		{name: "equal token other owner", before: &stored{5, "a"}, token: 5, owner: "b", wantStale: true},
		{name: "equal token owner differs in case", before: &stored{5, "a"}, token: 5, owner: "A", wantStale: true},
		{name: "equal token owner with trailing space", before: &stored{5, "a"}, token: 5, owner: "a ", wantStale: true},
		{name: "lower token", before: &stored{5, "a"}, token: 4, owner: "b", wantStale: true},
		{name: "lower token same owner", before: &stored{5, "a"}, token: 4, owner: "a", wantStale: true},
		{name: "largest token", before: &stored{5, "a"}, token: fence.MaxToken, owner: "b"},
	}
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		r := ordersTable(t, b)
		for i, c := range cases {
			id := "o" + string(rune('a'+i))
			if _, err := b.db.ExecContext(ctx, `INSERT INTO `+quote(b.table.Dialect, r.Table)+` (id, status) VALUES (`+ph(b.table.Dialect, 1)+`, 'NEW')`, id); err != nil {
				t.Fatalf("insert %s = %v", id, err)
			}
			key := []fence.Column{{Name: "id", Value: id}}
			if tok, owner, fenced, err := r.Current(ctx, b.db, key); err != nil || fenced || tok != 0 || owner != "" {
				t.Errorf("%s: Current(new row) = %d, %q, %v, %v, want 0, \"\", false, nil", c.name, tok, owner, fenced, err)
			}
			if c.before != nil {
				if err := rowUpdate(ctx, b.db, r.Update, id, "before", c.before.token, c.before.owner); err != nil {
					t.Fatalf("%s: first update (%d, %q) = %v", c.name, c.before.token, c.before.owner, err)
				}
			}
			err := rowUpdate(ctx, b.db, r.Update, id, "after", c.token, c.owner)
			want, wantStatus := stored{c.token, c.owner}, "after"
			if c.wantStale {
				want, wantStatus = *c.before, "before"
				var se *fence.StaleError
				if !errors.Is(err, baton.ErrStaleToken) || !errors.As(err, &se) {
					t.Errorf("%s: Update(%d, %q) = %v, want a *StaleError wrapping %v", c.name, c.token, c.owner, err, baton.ErrStaleToken)
				} else if se.StoredToken != c.before.token || se.StoredOwner != c.before.owner || se.Token != c.token || se.Owner != c.owner {
					t.Errorf("%s: StaleError = %+v, want the write and the stored (%d, %q)", c.name, *se, c.before.token, c.before.owner)
				}
			} else if err != nil {
				t.Errorf("%s: Update(%d, %q) = %v, want nil", c.name, c.token, c.owner, err)
			}
			tok, owner, fenced, err := r.Current(ctx, b.db, key)
			if err != nil || !fenced || (stored{tok, owner}) != want {
				t.Errorf("%s: Current = %d, %q, %v, %v, want %d, %q, true, nil", c.name, tok, owner, fenced, err, want.token, want.owner)
			}
			if s := status(t, b, r, id); s != wantStatus {
				t.Errorf("%s: status = %q, want %q", c.name, s, wantStatus)
			}
		}
	})
}

// TestRowStories: scheme 1 on the order story (B, token 502, pays and
// retries the identical write; A, 501, cancels late), with its negative
// control, plus what a fenced update must tell apart: a missing row is not
// a stale token, and a repeated identical write (MySQL reports 0 changed
// rows for it) is not stale either.
func TestRowStories(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		r := ordersTable(t, b)
		for _, id := range []string{"fenced", "unfenced"} {
			if _, err := b.db.ExecContext(ctx, `INSERT INTO `+quote(b.table.Dialect, r.Table)+` (id, status) VALUES (`+ph(b.table.Dialect, 1)+`, 'NEW')`, id); err != nil {
				t.Fatalf("insert %s = %v", id, err)
			}
		}
		// B (502) pays, retries the identical write, A (501) cancels late.
		for _, f := range []struct {
			id        string
			update    func(context.Context, *sql.Tx, []fence.Column, []fence.Column, uint64, string) error
			wantFinal string
		}{
			{"fenced", r.Update, "PAID"},
			{"unfenced", fence.UnfencedRow{Row: r}.Update, "CANCELLED"},
		} {
			for _, st := range []struct {
				token     uint64
				owner     string
				status    string
				wantStale bool
			}{{502, "B", "PAID", false}, {502, "B", "PAID", false}, {501, "A", "CANCELLED", f.id == "fenced"}} {
				err := rowUpdate(ctx, b.db, f.update, f.id, st.status, st.token, st.owner)
				if errors.Is(err, baton.ErrStaleToken) != st.wantStale || (err != nil && !st.wantStale) {
					t.Errorf("%s: Update(%d, %q, %s) = %v, want stale %v", f.id, st.token, st.owner, st.status, err, st.wantStale)
				}
			}
			if s := status(t, b, r, f.id); s != f.wantFinal {
				t.Errorf("%s: status = %q, want %q", f.id, s, f.wantFinal)
			}
		}
		// The row does not exist: sql.ErrNoRows, not a stale token.
		err := rowUpdate(ctx, b.db, r.Update, "missing", "PAID", 9, "C")
		if !errors.Is(err, sql.ErrNoRows) || errors.Is(err, baton.ErrStaleToken) {
			t.Errorf("Update(missing row) = %v, want %v and not %v", err, sql.ErrNoRows, baton.ErrStaleToken)
		}
		if _, _, _, err := r.Current(ctx, b.db, []fence.Column{{Name: "id", Value: "missing"}}); !errors.Is(err, sql.ErrNoRows) {
			t.Errorf("Current(missing row) = %v, want %v", err, sql.ErrNoRows)
		}
	})
}

// TestRowBadInput: identifiers are validated and never reach the SQL text.
func TestRowBadInput(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		r := ordersTable(t, b)
		tx, err := b.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatalf("BeginTx = %v", err)
		}
		defer tx.Rollback()
		key := []fence.Column{{Name: "id", Value: "x"}}
		set := []fence.Column{{Name: "status", Value: "s"}}
		cases := []struct {
			name     string
			row      fence.Row
			key, set []fence.Column
			token    uint64
			owner    string
		}{
			{"empty key", r, nil, set, 1, "a"},
			{"bad key column", r, []fence.Column{{Name: "id = id OR 1", Value: 1}}, set, 1, "a"},
			{"bad set column", r, key, []fence.Column{{Name: "status = 'x', id", Value: 1}}, 1, "a"},
			{"sets the token column", r, key, []fence.Column{{Name: "fence_token", Value: 1}}, 1, "a"},
			{"sets a column twice", r, key, append(set, set...), 1, "a"},
			{"bad table", fence.Row{Table: "orders; DROP TABLE x", Dialect: r.Dialect}, key, set, 1, "a"},
			{"no table", fence.Row{Dialect: r.Dialect}, key, set, 1, "a"},
			{"no dialect", fence.Row{Table: r.Table}, key, set, 1, "a"},
			{"bad token column", fence.Row{Table: r.Table, Dialect: r.Dialect, TokenColumn: "t t"}, key, set, 1, "a"},
			{"same fence columns", fence.Row{Table: r.Table, Dialect: r.Dialect, TokenColumn: "f", OwnerColumn: "F"}, key, set, 1, "a"},
			{"token too large", r, key, set, fence.MaxToken + 1, "a"},
			{"empty owner", r, key, set, 1, ""},
		}
		for _, c := range cases {
			if err := c.row.Update(ctx, tx, c.key, c.set, c.token, c.owner); !errors.Is(err, baton.ErrInvalidOption) {
				t.Errorf("%s: Update = %v, want %v", c.name, err, baton.ErrInvalidOption)
			}
		}
		if err := (fence.Row{Table: "bad name", Dialect: r.Dialect}).Migrate(ctx, b.db); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("Row{bad name}.Migrate = %v, want %v", err, baton.ErrInvalidOption)
		}
	})
}
