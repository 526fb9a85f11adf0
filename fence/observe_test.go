package fence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/internal/recorder"
	"github.com/baton-go/baton/memlock"
)

// wantOneStale checks that rec holds exactly one event, want, apart from
// its time, which must be set.
func wantOneStale(t *testing.T, rec *recorder.Recorder, want baton.Event) {
	t.Helper()
	got := rec.Events()
	if len(got) != 1 {
		t.Fatalf("events = %v, want [%v]", recorder.Kinds(got), baton.EventStaleRejected)
	}
	e := got[0]
	if e.Time.IsZero() {
		t.Errorf("%v event has no Time", e.Kind)
	}
	e.Time = want.Time
	if e != want {
		t.Errorf("event = %+v, want %+v", e, want)
	}
}

// leaseCtx returns the context of a lease of the lock name on an in-memory
// server, as a holder passes it to its fenced writes.
func leaseCtx(t *testing.T, name string) context.Context {
	t.Helper()
	srv := memlock.NewServer(memlock.Options{})
	t.Cleanup(srv.Close)
	m, err := srv.Client("writer").Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	l, err := m.Lock(t.Context())
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	return l.Context()
}

// TestTableObserver checks that an accepted write reports nothing and a
// stale one reports exactly one EventStaleRejected carrying both writes
// and the lock name of the lease the write ran under.
func TestTableObserver(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		rec := recorder.New()
		tbl := b.table
		tbl.Observer = rec
		ctx := leaseCtx(t, "orders/42")
		if err := b.write(ctx, tbl, "order-42", 7, "B", "b"); err != nil {
			t.Fatalf("write(7, B) = %v", err)
		}
		if got := rec.Events(); len(got) != 0 {
			t.Fatalf("accepted write reported %v, want nothing", recorder.Kinds(got))
		}
		err := b.write(ctx, tbl, "order-42", 6, "A", "a")
		if !errors.Is(err, baton.ErrStaleToken) {
			t.Fatalf("write(6, A) = %v, want %v", err, baton.ErrStaleToken)
		}
		wantOneStale(t, rec, baton.Event{
			Kind: baton.EventStaleRejected, Engine: "fence", Name: "orders/42", Resource: "order-42",
			Token: 6, Owner: "A", StoredToken: 7, StoredOwner: "B",
		})
	})
}

// TestRowObserver is TestTableObserver for the row scheme, without a lease
// in the context (Name stays empty).
func TestRowObserver(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		rec := recorder.New()
		r := fence.Row{Table: b.biz, Dialect: b.table.Dialect, Observer: rec}
		if err := r.Migrate(ctx, b.db); err != nil {
			t.Fatalf("Row.Migrate = %v", err)
		}
		if _, err := b.db.ExecContext(ctx, `INSERT INTO `+b.biz+` (id, value, history) VALUES ('k', '', '')`); err != nil {
			t.Fatalf("insert row = %v", err)
		}
		update := func(token uint64, owner string) error {
			tx, err := b.db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			key := []fence.Column{{Name: "id", Value: "k"}}
			if err := r.Update(ctx, tx, key, []fence.Column{{Name: "value", Value: owner}}, token, owner); err != nil {
				return err
			}
			return tx.Commit()
		}
		if err := update(9, "B"); err != nil {
			t.Fatalf("Update(9, B) = %v", err)
		}
		if err := update(9, "A"); !errors.Is(err, baton.ErrStaleToken) {
			t.Fatalf("Update(9, A) = %v, want %v", err, baton.ErrStaleToken)
		}
		got := rec.Events()
		if len(got) != 1 || got[0].Kind != baton.EventStaleRejected || got[0].Token != 9 || got[0].Owner != "A" ||
			got[0].StoredToken != 9 || got[0].StoredOwner != "B" || !strings.Contains(got[0].Resource, b.biz) {
			t.Errorf("events = %+v, want one stale rejection of (9, A) after (9, B) at %s", got, b.biz)
		}
	})
}

// TestPublisherObserver checks that a stale publish is reported once, with
// the object's name as the resource (not the pointer table's row).
func TestPublisherObserver(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		rec := recorder.New()
		p := publisher(t, b)
		p.Observer = rec
		const name = "exports/export-7"
		if _, err := p.Write(ctx, b.db, name, 12, "B", strings.NewReader("b")); err != nil {
			t.Fatalf("Write(12, B) = %v", err)
		}
		if _, err := p.Write(ctx, b.db, name, 11, "A", strings.NewReader("a")); !errors.Is(err, baton.ErrStaleToken) {
			t.Fatalf("Write(11, A) = %v, want %v", err, baton.ErrStaleToken)
		}
		wantOneStale(t, rec, baton.Event{
			Kind: baton.EventStaleRejected, Engine: "fence", Resource: name,
			Token: 11, Owner: "A", StoredToken: 12, StoredOwner: "B",
		})
	})
}
