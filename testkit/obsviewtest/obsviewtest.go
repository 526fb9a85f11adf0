// Package obsviewtest holds what the tests of baton's metrics adapters
// (the prom and otel modules) share: an acquire played without an engine,
// and the benchmark of one lease's events.
package obsviewtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
)

// Grant plays an engine's acquire of name on the "mem" engine's mutex: it
// reports the start, builds the lease with o as the grant's Observer, and
// reports the grant. The lease then reports its own state changes, with
// its own context. It returns the lease, its control and the acquire ID
// every event of it carries.
func Grant(ctx context.Context, o baton.Observer, name string, token uint64) (*baton.Lease, engine.Control, uint64) {
	id := engine.NextAcquireID()
	start := time.Now()
	engine.Emit(ctx, o, baton.Event{Kind: baton.EventAcquireStarted, Engine: "mem", Recipe: "mutex", Name: name, Acquire: id})
	l, ctl := engine.NewLease(ctx, engine.Grant{
		Name: name, Engine: "mem", Token: token, Owner: fmt.Sprint("owner-", token),
		Observer: o, Recipe: "mutex", Session: "s1", Acquire: id,
	})
	engine.Emit(ctx, o, baton.Event{Kind: baton.EventGranted, Engine: "mem", Recipe: "mutex", Name: name, Acquire: id,
		Token: token, Owner: l.Owner(), Session: "s1", Wait: time.Since(start), Depth: 1})
	return l, ctl, id
}

// BenchLeaseCycle measures o's handling of the events of one uncontended
// lease, started, granted and released, from parallel goroutines.
func BenchLeaseCycle(b *testing.B, o baton.Observer) {
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := engine.NextAcquireID()
			e := baton.Event{Engine: "redis", Recipe: "mutex", Name: "jobs/1", Acquire: id, Time: time.Now()}
			for _, k := range []baton.EventKind{baton.EventAcquireStarted, baton.EventGranted, baton.EventReleased} {
				e.Kind = k
				o.Observe(ctx, e)
			}
		}
	})
}
