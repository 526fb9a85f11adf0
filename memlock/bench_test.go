package memlock_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batonslog"
	"github.com/baton-go/baton/memlock"
)

// BenchmarkMutexLockUnlock measures one uncontended Lock and Release on
// the in-memory engine, without an Observer (which must cost nothing),
// with one that does nothing (the cost of building the events), and with
// batonslog writing to a discarded text handler at Debug (every event
// formatted) and at Info (every event of this path filtered out).
func BenchmarkMutexLockUnlock(b *testing.B) {
	cases := []struct {
		name string
		o    baton.Observer
	}{
		{"nil", nil},
		{"noop", baton.ObserverFunc(func(context.Context, baton.Event) {})},
		{"slog-debug", batonslog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}), batonslog.Options{})},
		{"slog-info", batonslog.New(slog.NewTextHandler(io.Discard, nil), batonslog.Options{})},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			srv := memlock.NewServer(memlock.Options{Observer: c.o})
			defer srv.Close()
			m, err := srv.Client("bench").Mutex("bench/lock")
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := m.Lock(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
