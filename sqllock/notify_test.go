package sqllock_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/sqllock"
)

// TestReleaseNotifiesOnlyWaiters: on PostgreSQL a mutex's release sends
// NOTIFY only when an attempt was refused since its grant. An
// uncontended lock+unlock sends none (each one came back to every
// LISTENing process: ten allocations and a wake-up of the listener per
// lock+unlock in this one); a release with a waiter in another client
// sends one, which wakes that waiter; the waiter's own release, with
// nobody waiting any more, sends none again.
func TestReleaseNotifiesOnlyWaiters(t *testing.T) {
	const prefix = "baton_notify_"
	ctx := opCtx(t, time.Minute)
	listen, err := pgx.Connect(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatalf("pgx.Connect = %v", err)
	}
	t.Cleanup(func() { _ = listen.Close(context.Background()) })
	b := backends(t)[0]
	holderDB, _ := b.open(t, false)
	waiterDB, _ := b.open(t, false)
	holder := newClient(t, holderDB, sqllock.Options{TablePrefix: prefix})
	// The waiter's polls are seconds apart: granted sooner, it was woken.
	waiter := newClient(t, waiterDB, sqllock.Options{TablePrefix: prefix, TTL: 16 * time.Second,
		Backoff: baton.Backoff{Base: 4 * time.Second, Max: 8 * time.Second}})
	warm(t, holder) // the table exists before LISTEN
	if _, err := listen.Exec(ctx, `LISTEN "`+prefix+`locks"`); err != nil {
		t.Fatalf("LISTEN = %v", err)
	}
	// notified is the next notification's payload within d, or "".
	notified := func(d time.Duration) string {
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		n, err := listen.WaitForNotification(wctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("WaitForNotification = %v", err)
			}
			return ""
		}
		return n.Payload
	}

	quiet := uniqueName("notify-quiet")
	for range 3 {
		if err := lock(t, holder, quiet).Release(ctx); err != nil {
			t.Fatalf("Release = %v", err)
		}
	}
	if got := notified(500 * time.Millisecond); got != "" {
		t.Fatalf("an uncontended release notified %q, want no NOTIFY", got)
	}

	name := uniqueName("notify-waited")
	held := lock(t, holder, name)
	m, err := waiter.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	var wl interface{ Release(context.Context) error }
	go func() {
		l, err := m.Lock(ctx)
		if err == nil {
			wl = l
		}
		got <- result{time.Now(), err}
	}()
	// The waiter's refused attempt marks the row.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting bool
		if err := holderDB.QueryRowContext(ctx, `SELECT waiting FROM `+prefix+`locks WHERE name = $1 AND slot = 0`, name).Scan(&waiting); err != nil {
			t.Fatalf("reading the waiting mark = %v", err)
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no refused attempt marked the row within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	released := time.Now()
	if err := held.Release(ctx); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if p := notified(5 * time.Second); p != name {
		t.Fatalf("the release with a waiter notified %q, want %q", p, name)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter's Lock = %v", r.err)
	}
	if wait := r.at.Sub(released); wait > 2*time.Second {
		t.Errorf("the waiter was granted %v after the release: not woken", wait)
	}
	if err := wl.Release(ctx); err != nil {
		t.Fatalf("the waiter's Release = %v", err)
	}
	if p := notified(500 * time.Millisecond); p != "" {
		t.Fatalf("a release nobody waited for notified %q, want no NOTIFY", p)
	}
}
