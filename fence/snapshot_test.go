package fence_test

import (
	"errors"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
)

// TestAdvanceAfterSnapshot: a transaction that read the fence before
// advancing it (under MySQL's REPEATABLE READ default that read fixes its
// snapshot) must be judged against the latest committed fence, and its
// StaleError must report that fence, not the snapshot's. SQLite has no
// subtest: it takes the write lock at BEGIN (_txlock=immediate), so no
// competitor can commit meanwhile.
func TestAdvanceAfterSnapshot(t *testing.T) {
	forEachServerDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		r := ordersTable(t, b)
		key := []fence.Column{{Name: "id", Value: "o1"}}
		if _, err := b.db.ExecContext(ctx, `INSERT INTO `+quote(b.table.Dialect, r.Table)+` (id, status) VALUES ('o1', 'NEW')`); err != nil {
			t.Fatalf("insert o1 = %v", err)
		}
		if err := b.write(ctx, b.table, "snap", 5, "A", "v5"); err != nil {
			t.Fatalf("write 5 = %v", err)
		}
		if err := rowUpdate(ctx, b.db, r.Update, "o1", "v5", 5, "A"); err != nil {
			t.Fatalf("row update 5 = %v", err)
		}

		tx, err := b.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatalf("BeginTx = %v", err)
		}
		defer tx.Rollback()
		if tok, _, err := b.table.Current(ctx, tx, "snap"); err != nil || tok != 5 {
			t.Fatalf("Current in tx = %d, %v, want 5", tok, err)
		}
		if tok, _, _, err := r.Current(ctx, tx, key); err != nil || tok != 5 {
			t.Fatalf("Row.Current in tx = %d, %v, want 5", tok, err)
		}
		// B is granted 6 and commits while the transaction is open.
		if err := b.write(ctx, b.table, "snap", 6, "B", "v6"); err != nil {
			t.Fatalf("B's write 6 = %v", err)
		}
		if err := rowUpdate(ctx, b.db, r.Update, "o1", "v6", 6, "B"); err != nil {
			t.Fatalf("B's row update 6 = %v", err)
		}

		want := fence.StaleError{Resource: "snap", Token: 6, Owner: "C", StoredToken: 6, StoredOwner: "B"}
		var se *fence.StaleError
		if err := b.table.Advance(ctx, tx, "snap", 6, "C"); !errors.As(err, &se) || *se != want {
			t.Errorf("Advance(snap, 6, C) after a snapshot = %v, want %v", err, &want)
		}
		err = r.Update(ctx, tx, key, []fence.Column{{Name: "status", Value: "vC"}}, 6, "C")
		if !errors.Is(err, baton.ErrStaleToken) || !errors.As(err, &se) || se.StoredToken != 6 || se.StoredOwner != "B" {
			t.Errorf("Row.Update(o1, 6, C) after a snapshot = %v, want stale after (6, B)", err)
		}
	})
}
