package idem_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton/idem"
)

// counted returns a call that counts its runs and returns result.
func counted(n *atomic.Int32, result string, err error) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		n.Add(1)
		if err != nil {
			return nil, err
		}
		return []byte(result), nil
	}
}

func TestRepeatedKeyReturnsRecordedResult(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		var calls atomic.Int32
		rec, err := s.Do(ctx, "order-1:label", counted(&calls, "label 42", nil), nil)
		if err != nil || rec.State != idem.Success || string(rec.Result) != "label 42" {
			t.Fatalf("Do(order-1:label) = %v, %v, want SUCCESS %q", rec, err, "label 42")
		}
		rec, err = s.Do(ctx, "order-1:label", counted(&calls, "label 43", nil), nil)
		if err != nil || string(rec.Result) != "label 42" || calls.Load() != 1 {
			t.Fatalf("second Do = %v %q, %v after %d calls, want the recorded %q and 1 call", rec, rec.Result, err, calls.Load(), "label 42")
		}
		if rec.Attempts != 1 {
			t.Errorf("Attempts = %d, want 1", rec.Attempts)
		}
		if _, err := s.Get(ctx, "never"); !errors.Is(err, idem.ErrNotFound) {
			t.Errorf("Get(never) = %v, want %v", err, idem.ErrNotFound)
		}
		// Keys are exact bytes on every database (MySQL's default collation
		// would fold case).
		if rec, err := s.Do(ctx, "ORDER-1:LABEL", counted(&calls, "other", nil), nil); err != nil || string(rec.Result) != "other" {
			t.Errorf("Do(ORDER-1:LABEL) = %q, %v, want its own call's %q", rec.Result, err, "other")
		}
	})
}

// TestConcurrentCallersOneCall: callers racing on one key make exactly one
// call; the others see it in progress or its recorded result.
func TestConcurrentCallersOneCall(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		for _, key := range []string{"race-1", "race-2", "race-3"} {
			var calls atomic.Int32
			call := func(context.Context) ([]byte, error) {
				calls.Add(1)
				time.Sleep(50 * time.Millisecond)
				return []byte("once"), nil
			}
			var wg sync.WaitGroup
			errs := make(chan error, 6)
			for range 6 {
				wg.Go(func() {
					rec, err := s.Do(ctx, key, call, nil)
					switch {
					case errors.Is(err, idem.ErrInProgress):
					case err != nil:
						errs <- err
					case string(rec.Result) != "once":
						errs <- errors.New("result " + string(rec.Result))
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("Do(%q) = %v", key, err)
			}
			if n := calls.Load(); n != 1 {
				t.Fatalf("Do(%q) from 6 callers made %d calls, want 1", key, n)
			}
		}
	})
}

// TestControlCheckThenCall is the negative control of
// TestConcurrentCallersOneCall: two callers that each look the key up and
// call when it is absent (a read, then an insert) both call, when both
// read before either records.
func TestControlCheckThenCall(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		var calls atomic.Int32
		absent := 0
		for range 2 { // both callers look the key up before either calls
			if _, err := s.Get(ctx, "k"); errors.Is(err, idem.ErrNotFound) {
				absent++
			}
		}
		for range absent { // each caller saw no record, so each calls
			_, _ = counted(&calls, "x", nil)(ctx)
		}
		if n := calls.Load(); n != 2 {
			t.Fatalf("check-then-call made %d calls, want 2 (the control must double-call)", n)
		}
	})
}

// TestTimeoutIsUnknownNeverFailed: an error after the request may have
// been sent is recorded UNKNOWN, never FAILED, and is settled by the query,
// not by calling again.
func TestTimeoutIsUnknownNeverFailed(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		s := b.store
		var calls atomic.Int32
		// The caller's own deadline ends the call; the record is still
		// written. The deadline leaves room for the claim before the call:
		// at 50ms a loaded CI host's claim ran into it ("record: timeout").
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		rec, err := s.Do(ctx, "label-7", func(ctx context.Context) ([]byte, error) {
			calls.Add(1)
			<-ctx.Done() // the supplier is slow; the request went out
			return nil, ctx.Err()
		}, nil)
		if !errors.Is(err, idem.ErrUnknown) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, idem.ErrFailed) {
			t.Fatalf("Do after a timeout = %v, want %v wrapping %v and not %v", err, idem.ErrUnknown, context.DeadlineExceeded, idem.ErrFailed)
		}
		if rec.State != idem.Unknown {
			t.Fatalf("record after a timeout = %v, want UNKNOWN", rec)
		}
		tctx := t.Context()
		// Without a query there is nothing safe to do.
		if _, err := s.Do(tctx, "label-7", counted(&calls, "x", nil), nil); !errors.Is(err, idem.ErrUnknown) {
			t.Errorf("Do without query on UNKNOWN = %v, want %v", err, idem.ErrUnknown)
		}
		// A query that cannot tell leaves it unknown.
		undecided := func(context.Context) ([]byte, idem.State, error) { return nil, idem.Unknown, nil }
		if _, err := s.Do(tctx, "label-7", counted(&calls, "x", nil), undecided); !errors.Is(err, idem.ErrUnknown) {
			t.Errorf("Do with an undecided query = %v, want %v", err, idem.ErrUnknown)
		}
		// The supplier's lookup finds the label: recorded, not re-bought.
		found := func(context.Context) ([]byte, idem.State, error) { return []byte("label 7 (found)"), idem.Success, nil }
		rec, err = s.Do(tctx, "label-7", counted(&calls, "x", nil), found)
		if err != nil || rec.State != idem.Success || string(rec.Result) != "label 7 (found)" {
			t.Fatalf("Do with a finding query = %v %q, %v, want SUCCESS %q", rec, rec.Result, err, "label 7 (found)")
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("calls = %d, want 1 (never a blind retry)", n)
		}
	})
}

// TestQueryInitResends: a query that proves the request never arrived
// moves the record back to INIT, and Do sends it again with the same key.
func TestQueryInitResends(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		var calls atomic.Int32
		if _, err := s.Do(ctx, "k", counted(&calls, "", errors.New("connection reset")), nil); !errors.Is(err, idem.ErrUnknown) {
			t.Fatalf("first Do = %v, want %v", err, idem.ErrUnknown)
		}
		notThere := func(context.Context) ([]byte, idem.State, error) { return nil, idem.Init, nil }
		rec, err := s.Do(ctx, "k", counted(&calls, "sent again", nil), notThere)
		if err != nil || string(rec.Result) != "sent again" || rec.Attempts != 2 || calls.Load() != 2 {
			t.Fatalf("Do after query said INIT = %v %q attempts %d, %v (calls %d), want SUCCESS %q, 2 attempts",
				rec, rec.Result, rec.Attempts, err, calls.Load(), "sent again")
		}
	})
}

func TestFailIsFinal(t *testing.T) {
	forEachDB(t, idem.Options{}, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		refused := errors.New("supplier: address invalid")
		var calls atomic.Int32
		rec, err := s.Do(ctx, "k", counted(&calls, "", idem.Fail(refused)), nil)
		if !errors.Is(err, idem.ErrFailed) || !errors.Is(err, refused) || rec.State != idem.Failed {
			t.Fatalf("Do with a definite failure = %v, %v, want FAILED wrapping %v and %v", rec, err, idem.ErrFailed, refused)
		}
		if _, err := s.Do(ctx, "k", counted(&calls, "x", nil), nil); !errors.Is(err, idem.ErrFailed) || calls.Load() != 1 {
			t.Errorf("second Do of a FAILED key = %v after %d calls, want %v and 1 call", err, calls.Load(), idem.ErrFailed)
		}
	})
}

// TestStuckUnknownGoesToManualList: a supplier without a query API. The
// unknown record moves to the manual list after the
// budget; from then on Do calls and queries nothing; an operator resolves
// it from the supplier's bill.
func TestStuckUnknownGoesToManualList(t *testing.T) {
	forEachDB(t, idem.Options{UnknownBudget: 300 * time.Millisecond}, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		var calls atomic.Int32
		if _, err := s.Do(ctx, "label-9", counted(&calls, "", errors.New("read timeout")), nil); !errors.Is(err, idem.ErrUnknown) {
			t.Fatalf("Do = %v, want %v", err, idem.ErrUnknown)
		}
		if list, err := s.Stuck(ctx); err != nil || len(list) != 0 {
			t.Fatalf("Stuck within the budget = %v, %v, want empty", list, err)
		}
		time.Sleep(400 * time.Millisecond)
		list, err := s.Stuck(ctx)
		if err != nil || len(list) != 1 || list[0].Key != "label-9" || !list[0].Manual || list[0].State != idem.Unknown {
			t.Fatalf("Stuck past the budget = %v, %v, want [label-9 UNKNOWN manual]", list, err)
		}
		var queried atomic.Int32
		query := func(context.Context) ([]byte, idem.State, error) {
			queried.Add(1)
			return nil, idem.Init, nil
		}
		if _, err := s.Do(ctx, "label-9", counted(&calls, "x", nil), query); !errors.Is(err, idem.ErrManual) {
			t.Fatalf("Do on a manual record = %v, want %v", err, idem.ErrManual)
		}
		if calls.Load() != 1 || queried.Load() != 0 {
			t.Errorf("manual record: %d calls, %d queries, want 1 and 0", calls.Load(), queried.Load())
		}
		rec, err := s.Resolve(ctx, "label-9", idem.Success, []byte("label 9 (bill)"), "found on the supplier's bill")
		if err != nil || rec.State != idem.Success || rec.Manual {
			t.Fatalf("Resolve = %v, %v, want SUCCESS off the list", rec, err)
		}
		if list, err := s.Stuck(ctx); err != nil || len(list) != 0 {
			t.Errorf("Stuck after Resolve = %v, %v, want empty", list, err)
		}
		if rec, err := s.Do(ctx, "label-9", counted(&calls, "x", nil), nil); err != nil || string(rec.Result) != "label 9 (bill)" {
			t.Errorf("Do after Resolve = %q, %v, want %q", rec.Result, err, "label 9 (bill)")
		}
		if _, err := s.Resolve(ctx, "label-9", idem.Failed, nil, "again"); !errors.Is(err, idem.ErrConflict) {
			t.Errorf("Resolve of a final record = %v, want %v", err, idem.ErrConflict)
		}
	})
}

// TestCrashedCallerBecomesUnknown: a caller that hangs (or died) in
// REQUESTING past RequestBudget is presumed dead; the next Do treats the
// record as UNKNOWN and queries, never calls again. When the hung caller
// finally returns, its outcome is refused with ErrConflict.
func TestCrashedCallerBecomesUnknown(t *testing.T) {
	forEachDB(t, idem.Options{RequestBudget: 200 * time.Millisecond}, func(t *testing.T, b backend) {
		ctx, s := t.Context(), b.store
		release := make(chan struct{})
		started := make(chan struct{})
		hungErr := make(chan error, 1)
		go func() {
			_, err := s.Do(ctx, "k", func(context.Context) ([]byte, error) {
				close(started)
				<-release
				return []byte("late"), nil
			}, nil)
			hungErr <- err
		}()
		<-started
		var calls atomic.Int32
		if _, err := s.Do(ctx, "k", counted(&calls, "x", nil), nil); !errors.Is(err, idem.ErrInProgress) {
			t.Errorf("Do while the first caller is within budget = %v, want %v", err, idem.ErrInProgress)
		}
		time.Sleep(300 * time.Millisecond)
		found := func(context.Context) ([]byte, idem.State, error) { return []byte("found"), idem.Success, nil }
		rec, err := s.Do(ctx, "k", counted(&calls, "x", nil), found)
		if err != nil || string(rec.Result) != "found" || calls.Load() != 0 {
			t.Errorf("Do past RequestBudget = %v %q, %v after %d calls, want SUCCESS %q from the query, no call", rec, rec.Result, err, calls.Load(), "found")
		}
		close(release)
		if err := <-hungErr; !errors.Is(err, idem.ErrConflict) {
			t.Errorf("the hung caller's Do = %v, want %v", err, idem.ErrConflict)
		}
	})
}
