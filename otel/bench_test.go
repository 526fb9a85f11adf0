package batonotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton"
	batonotel "github.com/baton-go/baton/otel"
)

// BenchmarkLeaseCycle measures the events of one uncontended lease:
// started, granted, released, on the global (no-op) providers.
func BenchmarkLeaseCycle(b *testing.B) {
	c, err := batonotel.New(batonotel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := baton.NextAcquireID()
			e := baton.Event{Engine: "redis", Recipe: "mutex", Name: "jobs/1", Acquire: id, Time: time.Now()}
			for _, k := range []baton.EventKind{baton.EventAcquireStarted, baton.EventGranted, baton.EventReleased} {
				e.Kind = k
				c.Observe(ctx, e)
			}
		}
	})
}
