package batonslog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batonslog"
	"github.com/baton-go/baton/fence"
)

// records decodes the JSON lines a slog.JSONHandler wrote.
func records(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(buf)
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("decode record: %v", err)
		}
		out = append(out, m)
	}
	return out
}

func newJSON(level slog.Level) (*bytes.Buffer, *batonslog.Observer) {
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level})
	return &buf, batonslog.New(h, batonslog.Options{})
}

var at = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestRecords checks each kind's level, message and attributes as a JSON
// consumer sees them.
func TestRecords(t *testing.T) {
	cause := errors.New("session 0x1 expired")
	cases := []struct {
		name  string
		e     baton.Event
		level string
		attrs map[string]any // JSON numbers decode as float64
	}{
		{
			name: "granted",
			e: baton.Event{Kind: baton.EventGranted, Engine: "zk", Name: "orders/42", Recipe: "mutex", Acquire: 7,
				Token: 1234, Owner: "/baton/orders/42/_c_x-lock-0000000001", Session: "0x1", Depth: 1, Wait: 1500 * time.Microsecond},
			level: "DEBUG",
			attrs: map[string]any{"event": "granted", "engine": "zk", "lock": "orders/42", "recipe": "mutex", "acquire": 7.0,
				"token": 1234.0, "owner": "/baton/orders/42/_c_x-lock-0000000001", "session": "0x1", "depth": 1.0, "wait_ms": 1.5},
		},
		{
			name:  "retry at the head keeps position 0",
			e:     baton.Event{Kind: baton.EventAcquireRetry, Engine: "mem", Name: "n", Recipe: "semaphore", Acquire: 2, Attempt: 3, Position: 0},
			level: "DEBUG",
			attrs: map[string]any{"event": "acquire_retry", "engine": "mem", "lock": "n", "recipe": "semaphore", "acquire": 2.0, "attempt": 3.0, "position": 0.0},
		},
		{
			name: "lost",
			e: baton.Event{Kind: baton.EventLost, Engine: "redis", Name: "n", Acquire: 3, Token: 9, Owner: "o", Hold: 2 * time.Second,
				Lead: 250 * time.Millisecond, Err: cause},
			level: "WARN",
			attrs: map[string]any{"event": "lost", "engine": "redis", "lock": "n", "acquire": 3.0, "token": 9.0, "owner": "o",
				"hold_ms": 2000.0, "lead_ms": 250.0, "err": cause.Error()},
		},
		{
			name:  "suspended",
			e:     baton.Event{Kind: baton.EventSuspended, Engine: "zk", Name: "n", Acquire: 4, Token: 9, Owner: "o", Session: "0x2"},
			level: "INFO",
			attrs: map[string]any{"event": "suspended", "engine": "zk", "lock": "n", "acquire": 4.0, "token": 9.0, "owner": "o", "session": "0x2"},
		},
		{
			name: "stale rejected",
			e: baton.Event{Kind: baton.EventStaleRejected, Engine: "fence", Name: "n", Resource: "order-42", Token: 6, Owner: "A",
				StoredToken: 7, StoredOwner: "B"},
			level: "WARN",
			attrs: map[string]any{"event": "stale_rejected", "engine": "fence", "lock": "n", "resource": "order-42", "token": 6.0,
				"owner": "A", "stored_token": 7.0, "stored_owner": "B"},
		},
		{
			name:  "release failed",
			e:     baton.Event{Kind: baton.EventReleaseFailed, Engine: "mysql", Name: "n", Token: 5, Owner: "o", Err: cause},
			level: "WARN",
			attrs: map[string]any{"event": "release_failed", "engine": "mysql", "lock": "n", "token": 5.0, "owner": "o", "err": cause.Error()},
		},
		{
			name:  "idempotency manual",
			e:     baton.Event{Kind: baton.EventIdempotency, Engine: "idem", Resource: "pay-1", Outcome: "manual"},
			level: "WARN",
			attrs: map[string]any{"event": "idempotency", "engine": "idem", "resource": "pay-1", "outcome": "manual"},
		},
		{
			name:  "idempotency hit",
			e:     baton.Event{Kind: baton.EventIdempotency, Engine: "idem", Resource: "pay-1", Outcome: "hit"},
			level: "DEBUG",
			attrs: map[string]any{"event": "idempotency", "engine": "idem", "resource": "pay-1", "outcome": "hit"},
		},
		{
			name:  "task takeover",
			e:     baton.Event{Kind: baton.EventTask, Engine: "tasks", Resource: "t1", Token: 3, Owner: "w2", Outcome: "takeover", Duration: 90 * time.Second},
			level: "INFO",
			attrs: map[string]any{"event": "task", "engine": "tasks", "resource": "t1", "token": 3.0, "owner": "w2", "outcome": "takeover", "duration_ms": 90000.0},
		},
		{
			name:  "late renewal",
			e:     baton.Event{Kind: baton.EventRenewal, Engine: "redis", Count: 12, Duration: 40 * time.Millisecond, Late: true},
			level: "WARN",
			attrs: map[string]any{"event": "renewal", "engine": "redis", "count": 12.0, "duration_ms": 40.0, "late": true},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			buf, o := newJSON(slog.LevelDebug)
			c.e.Time = at
			o.Observe(t.Context(), c.e)
			recs := records(t, buf)
			if len(recs) != 1 {
				t.Fatalf("Observe wrote %d records, want 1", len(recs))
			}
			r := recs[0]
			if r["level"] != c.level {
				t.Errorf("level = %v, want %s", r["level"], c.level)
			}
			if want := "baton " + c.e.Kind.String(); r["msg"] != want {
				t.Errorf("msg = %v, want %q", r["msg"], want)
			}
			if ts, _ := r["time"].(string); ts != at.Format(time.RFC3339Nano) {
				t.Errorf("time = %v, want %v", r["time"], at.Format(time.RFC3339Nano))
			}
			for _, k := range []string{"time", "level", "msg"} {
				delete(r, k)
			}
			if len(r) != len(c.attrs) {
				t.Errorf("attrs = %v, want %v", r, c.attrs)
			}
			for k, v := range c.attrs {
				if r[k] != v {
					t.Errorf("attr %s = %v (%T), want %v", k, r[k], r[k], v)
				}
			}
		})
	}
}

// TestLevelFilter checks that a handler at Info writes no record for the
// routine flow and does write losses, and that Options.Level overrides.
func TestLevelFilter(t *testing.T) {
	buf, o := newJSON(slog.LevelInfo)
	ctx := t.Context()
	o.Observe(ctx, baton.Event{Kind: baton.EventAcquireStarted, Engine: "zk", Name: "n"})
	o.Observe(ctx, baton.Event{Kind: baton.EventGranted, Engine: "zk", Name: "n"})
	o.Observe(ctx, baton.Event{Kind: baton.EventLost, Engine: "zk", Name: "n"})
	recs := records(t, buf)
	if len(recs) != 1 || recs[0]["event"] != "lost" {
		t.Fatalf("records at Info = %v, want only the loss", recs)
	}

	var out bytes.Buffer
	warnSuspend := func(e baton.Event) slog.Level {
		if e.Kind == baton.EventSuspended {
			return slog.LevelWarn
		}
		return batonslog.Level(e)
	}
	o = batonslog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}), batonslog.Options{Level: warnSuspend})
	o.Observe(ctx, baton.Event{Kind: baton.EventSuspended, Engine: "zk", Name: "n"})
	o.Observe(ctx, baton.Event{Kind: baton.EventResumed, Engine: "zk", Name: "n"})
	recs = records(t, &out)
	if len(recs) != 1 || recs[0]["event"] != "suspended" || recs[0]["level"] != "WARN" {
		t.Fatalf("records with Suspended raised to Warn = %v, want one WARN suspended", recs)
	}
}

type ctxKey struct{}

// ctxHandler records the context values its Enabled and Handle saw.
type ctxHandler struct {
	slog.Handler
	seen *[]any
}

func (h ctxHandler) Enabled(ctx context.Context, l slog.Level) bool {
	*h.seen = append(*h.seen, ctx.Value(ctxKey{}))
	return true
}

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	*h.seen = append(*h.seen, ctx.Value(ctxKey{}))
	return nil
}

// TestContext checks that the handler gets the context given to Observe,
// from which tracing handlers read their span.
func TestContext(t *testing.T) {
	var seen []any
	o := batonslog.New(ctxHandler{seen: &seen}, batonslog.Options{})
	ctx := context.WithValue(t.Context(), ctxKey{}, "span-1")
	o.Observe(ctx, baton.Event{Kind: baton.EventLost, Engine: "zk", Name: "n"})
	if len(seen) != 2 || seen[0] != "span-1" || seen[1] != "span-1" {
		t.Errorf("handler saw context values %v, want span-1 in Enabled and Handle", seen)
	}
}

// TestHashNames checks that a hashed observer logs the pseudonym, never
// the lock name.
func TestHashNames(t *testing.T) {
	buf, o := newJSON(slog.LevelDebug)
	h := baton.HashNames([]byte("k"), o)
	h.Observe(t.Context(), baton.Event{Kind: baton.EventGranted, Engine: "zk", Name: "tenant-17/payments"})
	recs := records(t, buf)
	if len(recs) != 1 {
		t.Fatalf("records = %v, want 1", recs)
	}
	lock, _ := recs[0]["lock"].(string)
	if lock == "" || lock == "tenant-17/payments" || lock[:2] != "h:" {
		t.Errorf("lock = %q, want a pseudonym h:…", lock)
	}
}

// TestStaleRejectionNamesLock: a refusal reported by a fence whose write
// context names its lock (fence.WithLockName) logs the lock with both
// tokens.
func TestStaleRejectionNamesLock(t *testing.T) {
	buf, o := newJSON(slog.LevelWarn)
	ctx := fence.WithLockName(context.Background(), "orders/42")
	fence.Observe(ctx, o, &fence.StaleError{Resource: "order-42", Token: 6, Owner: "A", StoredToken: 7, StoredOwner: "B"})
	recs := records(t, buf)
	if len(recs) != 1 || recs[0]["lock"] != "orders/42" || recs[0]["token"] != 6.0 || recs[0]["stored_token"] != 7.0 {
		t.Errorf("records %v, want one naming lock orders/42 with token 6 and stored_token 7", recs)
	}
}
