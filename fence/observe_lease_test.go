package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/internal/recorder"
	"github.com/baton-go/baton/memlock"
)

// lostLease returns a lease of name on an in-memory server whose session
// has expired: the lease is Lost and its context cancelled with a cause
// wrapping baton.ErrLost.
func lostLease(t *testing.T, name string) *baton.Lease {
	t.Helper()
	srv := memlock.NewServer(memlock.Options{})
	t.Cleanup(srv.Close)
	c := srv.Client("zombie")
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	l, err := m.Lock(t.Context())
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	mc, _ := baton.As[*memlock.Client](c)
	mc.Expire()
	<-l.Done()
	if !errors.Is(context.Cause(l.Context()), baton.ErrLost) {
		t.Fatalf("lease context cause = %v, want one wrapping %v", context.Cause(l.Context()), baton.ErrLost)
	}
	return l
}

// wantLost checks that err is the lost-lease error: it wraps baton.ErrLost
// and the context's error, and is not a stale rejection.
func wantLost(t *testing.T, what string, err error) {
	t.Helper()
	var se *fence.StaleError
	if !errors.Is(err, baton.ErrLost) || !errors.Is(err, context.Canceled) || errors.Is(err, baton.ErrStaleToken) || errors.As(err, &se) {
		t.Errorf("%s with a lost lease's context = %v, want an error wrapping %v and %v, not %v",
			what, err, baton.ErrLost, context.Canceled, baton.ErrStaleToken)
	}
}

// TestWriteWithLostLeaseContext: a write made with the context of a lease
// this process already knows is lost stops before the fence, and its error
// says so (baton.ErrLost), through Write, through Advance in the caller's
// own transaction and through Row.Update; nothing is reported as stale. A
// zombie that has not learnt of the loss (its context still live) reaches
// the fence and is refused as stale, with the lease's name.
func TestWriteWithLostLeaseContext(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		rec := recorder.New()
		tbl := b.table
		tbl.Observer = rec
		l := lostLease(t, "orders/42")
		if err := tbl.Write(t.Context(), b.db, "order-42", 2, "next", func(*sql.Tx) error { return nil }); err != nil {
			t.Fatalf("next holder's Write(2) = %v", err)
		}
		ran := false
		err := tbl.Write(l.Context(), b.db, "order-42", l.Token(), l.Owner(), func(*sql.Tx) error { ran = true; return nil })
		wantLost(t, "Write", err)
		if ran {
			t.Error("Write ran fn with a lost lease's context")
		}

		tx, err := b.db.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatalf("BeginTx = %v", err)
		}
		wantLost(t, "Advance", tbl.Advance(l.Context(), tx, "order-42", l.Token(), l.Owner()))
		_ = tx.Rollback()

		if got := rec.Events(); len(got) != 0 {
			t.Errorf("writes cut short by the lost lease reported %v, want nothing", recorder.Kinds(got))
		}

		// The zombie that has not noticed: its context lives on.
		err = tbl.Write(context.WithoutCancel(l.Context()), b.db, "order-42", l.Token(), l.Owner(), func(*sql.Tx) error { return nil })
		var se *fence.StaleError
		if !errors.As(err, &se) || errors.Is(err, baton.ErrLost) {
			t.Fatalf("zombie Write = %v, want a *StaleError and not %v", err, baton.ErrLost)
		}
		if se.Name != "orders/42" || se.Token != l.Token() || se.StoredToken != 2 || !strings.Contains(err.Error(), `lock "orders/42"`) {
			t.Errorf("StaleError = %+v (%v), want lock orders/42, token %d after 2", se, err, l.Token())
		}
		wantOneStale(t, rec, baton.Event{
			Kind: baton.EventStaleRejected, Engine: "fence", Name: "orders/42", Resource: "order-42",
			Token: l.Token(), Owner: l.Owner(), StoredToken: 2, StoredOwner: "next",
		})
	})
}

// TestRowUpdateWithLostLeaseContext is the lost-lease case for the row
// scheme, in the caller's own transaction.
func TestRowUpdateWithLostLeaseContext(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		r := fence.Row{Table: b.biz, Dialect: b.table.Dialect}
		if err := r.Migrate(ctx, b.db); err != nil {
			t.Fatalf("Row.Migrate = %v", err)
		}
		if _, err := b.db.ExecContext(ctx, `INSERT INTO `+b.biz+` (id, value, history) VALUES ('k', '', '')`); err != nil {
			t.Fatalf("insert row = %v", err)
		}
		l := lostLease(t, "orders/42")
		tx, err := b.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatalf("BeginTx = %v", err)
		}
		defer tx.Rollback()
		key := []fence.Column{{Name: "id", Value: "k"}}
		wantLost(t, "Row.Update", r.Update(l.Context(), tx, key, []fence.Column{{Name: "value", Value: "z"}}, l.Token(), l.Owner()))
	})
}

// TestStaleNameWithoutLeaseContext: a write whose context is not its
// lease's (a request's context) names its lock with WithLockName, and the
// refusal carries that name in the StaleError and the event, with both
// tokens. Without either, the name stays empty.
func TestStaleNameWithoutLeaseContext(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		rec := recorder.New()
		tbl := b.table
		tbl.Observer = rec
		ctx := t.Context()
		if err := b.write(ctx, tbl, "order-42", 7, "B", "b"); err != nil {
			t.Fatalf("write(7, B) = %v", err)
		}
		err := b.write(fence.WithLockName(ctx, "orders/42"), tbl, "order-42", 6, "A", "a")
		var se *fence.StaleError
		if !errors.As(err, &se) || se.Name != "orders/42" {
			t.Fatalf("write(6, A) = %v, want a *StaleError naming lock orders/42", err)
		}
		wantOneStale(t, rec, baton.Event{
			Kind: baton.EventStaleRejected, Engine: "fence", Name: "orders/42", Resource: "order-42",
			Token: 6, Owner: "A", StoredToken: 7, StoredOwner: "B",
		})
		if err := b.write(ctx, tbl, "order-42", 5, "C", "c"); !errors.As(err, &se) || se.Name != "" {
			t.Errorf("write(5, C) without a name = %v, want a *StaleError with no lock name", err)
		}
	})
}

// TestWithCause: only a context ended with a cause of its own adds it;
// a stale rejection and a plain cancellation are returned as they are.
func TestWithCause(t *testing.T) {
	base := errors.New("fence: begin: context canceled")
	plain, cancel := context.WithCancel(context.Background())
	cancel()
	if got := fence.WithCause(plain, base); got != base {
		t.Errorf("WithCause(plainly cancelled, err) = %v, want err unchanged", got)
	}
	if got := fence.WithCause(context.Background(), base); got != base {
		t.Errorf("WithCause(live, err) = %v, want err unchanged", got)
	}
	lost, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(baton.ErrLost)
	se := &fence.StaleError{Resource: "r"}
	if got := fence.WithCause(lost, se); got != error(se) {
		t.Errorf("WithCause(lost, stale) = %v, want the *StaleError unchanged", got)
	}
	if got := fence.WithCause(lost, nil); got != nil {
		t.Errorf("WithCause(lost, nil) = %v", got)
	}
	got := fence.WithCause(lost, base)
	if !errors.Is(got, baton.ErrLost) || !errors.Is(got, base) || fence.WithCause(lost, got) != got {
		t.Errorf("WithCause(lost, err) = %v, want err and %v, added once", got, baton.ErrLost)
	}
}
