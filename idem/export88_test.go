package idem_test

import (
	"context"

	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/idem"
)

// export88 is the export-88 story: the result of export-88 is published as
// a pointer in the database, behind a fence on "export-88", and every
// publish that lands is logged (the count the story is about).
type export88 struct {
	b        backend
	fence    fence.Fence
	pointers string // (id, pointer)
	log      string // one row per publish that landed
	sent     atomic.Int32
}

func newExport88(t *testing.T, b backend, unfenced bool) *export88 {
	t.Helper()
	d, err := fence.DialectOf(b.db)
	if err != nil {
		t.Fatalf("fence.DialectOf = %v", err)
	}
	table := fence.Table{Name: "fence_" + b.suffix, Dialect: d}
	dropLater(t, b.db, table.Name)
	if err := table.Migrate(t.Context(), b.db); err != nil {
		t.Fatalf("fence Migrate = %v", err)
	}
	e := &export88{b: b, fence: table, pointers: "ptr_" + b.suffix, log: "publog_" + b.suffix}
	if unfenced {
		e.fence = fence.Unfenced{Table: table}
	}
	dropLater(t, b.db, e.pointers)
	dropLater(t, b.db, e.log)
	exec(t, b.db, `CREATE TABLE `+e.pointers+` (id VARCHAR(64) PRIMARY KEY, pointer VARCHAR(200) NOT NULL)`)
	exec(t, b.db, `CREATE TABLE `+e.log+` (id VARCHAR(64) NOT NULL, pointer VARCHAR(200) NOT NULL)`)
	exec(t, b.db, `INSERT INTO `+e.pointers+` (id, pointer) VALUES ('export-88', '')`)
	return e
}

// publish is the external effect: behind the fence, point export-88 at
// the holder's object and log the publish, in one transaction. A stale
// token is a definite failure (nothing changed), so it is marked idem.Fail.
func (e *export88) publish(token uint64, owner string) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		e.sent.Add(1)
		ptr := fmt.Sprintf("export-88/%d.out", token)
		tx, err := e.b.db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		defer tx.Rollback()
		if err := e.fence.Advance(ctx, tx, "export-88", token, owner); err != nil {
			if errors.Is(err, baton.ErrStaleToken) {
				return nil, idem.Fail(err)
			}
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE `+e.pointers+` SET pointer = `+e.b.ph(1)+` WHERE id = 'export-88'`, ptr); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+e.log+` (id, pointer) VALUES ('export-88', `+e.b.ph(1)+`)`, ptr); err != nil {
			return nil, err
		}
		if err := tx.Commit(); err != nil {
			return nil, err
		}
		return []byte(ptr), nil
	}
}

// query reads the resource: is the pointer ours?
func (e *export88) query(token uint64) func(context.Context) ([]byte, idem.State, error) {
	return func(ctx context.Context) ([]byte, idem.State, error) {
		ptr := e.pointer(ctx)
		if ptr == fmt.Sprintf("export-88/%d.out", token) {
			return []byte(ptr), idem.Success, nil
		}
		return nil, idem.Unknown, nil
	}
}

func (e *export88) pointer(ctx context.Context) string {
	var p string
	_ = e.b.db.QueryRowContext(ctx, `SELECT pointer FROM `+e.pointers+` WHERE id = 'export-88'`).Scan(&p)
	return p
}

func (e *export88) published(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.b.db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM `+e.log).Scan(&n); err != nil {
		t.Fatalf("count publishes = %v", err)
	}
	return n
}

// TestExport88: A holds token 701 and pauses; B is granted 702 and
// publishes under request key export-88:publish. B's retry of the key
// returns the recorded result without publishing; A's late retry of the
// same key returns B's result; A's publish under another key reaches the
// fence and is refused. One publish, pointer 702.
func TestExport88(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		e := newExport88(t, b, false)
		const key = "export-88:publish"

		rec, err := s.Do(ctx, key, e.publish(702, "B"), e.query(702))
		if err != nil || string(rec.Result) != "export-88/702.out" {
			t.Fatalf("B's Do(%q) = %v, %v, want SUCCESS export-88/702.out", key, rec, err)
		}
		rec, err = s.Do(ctx, key, e.publish(702, "B"), e.query(702))
		if err != nil || string(rec.Result) != "export-88/702.out" {
			t.Fatalf("B's retry Do(%q) = %v, %v, want the recorded export-88/702.out", key, rec, err)
		}
		rec, err = s.Do(ctx, key, e.publish(701, "A"), e.query(701))
		if err != nil || string(rec.Result) != "export-88/702.out" {
			t.Fatalf("A's late Do(%q) = %v, %v, want the recorded export-88/702.out", key, rec, err)
		}
		if n := e.sent.Load(); n != 1 {
			t.Errorf("publish calls = %d, want 1", n)
		}
		// A's request under a key of its own gets past idempotency: the
		// fence is what refuses 701.
		rec, err = s.Do(ctx, "export-88:publish:A", e.publish(701, "A"), e.query(701))
		if !errors.Is(err, baton.ErrStaleToken) || !errors.Is(err, idem.ErrFailed) || rec.State != idem.Failed {
			t.Fatalf("A's Do under its own key = %v, %v, want FAILED wrapping %v", rec, err, baton.ErrStaleToken)
		}
		if p, n := e.pointer(ctx), e.published(t); p != "export-88/702.out" || n != 1 {
			t.Errorf("after the story: pointer %q, %d publishes, want export-88/702.out and 1", p, n)
		}
	})
}

// TestExport88LostResponse: B's publish lands but its response is lost.
// The record is UNKNOWN; B's retry queries the pointer instead of
// publishing again.
func TestExport88LostResponse(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		e := newExport88(t, b, false)
		lost := func(ctx context.Context) ([]byte, error) {
			if _, err := e.publish(702, "B")(ctx); err != nil {
				return nil, err
			}
			return nil, errors.New("read tcp: connection reset by peer") // after the commit
		}
		if rec, err := s.Do(ctx, "export-88:publish", lost, e.query(702)); !errors.Is(err, idem.ErrUnknown) || rec.State != idem.Unknown {
			t.Fatalf("Do with the response lost = %v, %v, want UNKNOWN", rec, err)
		}
		rec, err := s.Do(ctx, "export-88:publish", e.publish(702, "B"), e.query(702))
		if err != nil || string(rec.Result) != "export-88/702.out" {
			t.Fatalf("B's retry = %v, %v, want SUCCESS export-88/702.out from the query", rec, err)
		}
		if n := e.published(t); n != 1 {
			t.Errorf("publishes = %d, want 1", n)
		}
	})
}

// TestControlExport88BlindRetry is the negative control of
// TestExport88LostResponse: retrying the publish blindly after the lost
// response publishes twice. The fence cannot stop it: the same grant
// writing again is accepted (equal token, same owner). Only the
// idempotency record can.
func TestControlExport88BlindRetry(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		ctx := t.Context()
		e := newExport88(t, b, false)
		for i := range 2 { // the first response is lost; the caller retries
			if _, err := e.publish(702, "B")(ctx); err != nil {
				t.Fatalf("publish %d = %v", i, err)
			}
		}
		if n := e.published(t); n != 2 {
			t.Fatalf("blind retry: %d publishes, want 2 (the control must double-publish)", n)
		}
	})
}

// TestControlExport88Unfenced is the negative control of TestExport88:
// without the fence, A's late publish under its own key lands and points
// export-88 at the stale 701 object.
func TestControlExport88Unfenced(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		e := newExport88(t, b, true)
		if _, err := s.Do(ctx, "export-88:publish", e.publish(702, "B"), e.query(702)); err != nil {
			t.Fatalf("B's Do = %v", err)
		}
		if _, err := s.Do(ctx, "export-88:publish:A", e.publish(701, "A"), e.query(701)); err != nil {
			t.Fatalf("A's unfenced Do = %v, want it to land", err)
		}
		if p := e.pointer(ctx); p != "export-88/701.out" {
			t.Fatalf("unfenced pointer = %q, want the stale export-88/701.out (the control must break)", p)
		}
	})
}
