package batonprom_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batonslog"
	"github.com/baton-go/baton/engine"
	batonprom "github.com/baton-go/baton/prom"
)

// The Collector is registered once and given as the Observer of every
// engine, fence, idem and tasks value. Here a lease built as an engine
// builds it stands in for an engine's grant; the lease reports its own
// release.
func Example() {
	c := batonprom.New(batonprom.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	// serve it: http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	// What an engine does when it grants, with Options.Observer set to c.
	ctx := context.Background()
	id := engine.NextAcquireID()
	engine.Emit(ctx, c, baton.Event{Kind: baton.EventAcquireStarted, Engine: "mem", Recipe: "mutex", Name: "orders/42", Acquire: id})
	l, _ := engine.NewLease(ctx, engine.Grant{Name: "orders/42", Engine: "mem", Token: 7, Observer: c, Recipe: "mutex", Acquire: id})
	engine.Emit(ctx, c, baton.Event{Kind: baton.EventGranted, Engine: "mem", Recipe: "mutex", Name: "orders/42", Acquire: id, Token: 7, Depth: 1})

	fmt.Println("held:", gathered(reg, "baton_leases_held"))
	_ = l.Release(ctx)
	fmt.Println("held:", gathered(reg, "baton_leases_held"))
	fmt.Println("granted:", gathered(reg, "baton_acquires_total"))

	// A fenced resource refuses the write of a former holder.
	c.Observe(ctx, baton.Event{Kind: baton.EventStaleRejected, Engine: "fence", Resource: "orders", Token: 6, StoredToken: 7})
	fmt.Println("stale:", gathered(reg, "baton_stale_rejections_total"))
	// Output:
	// held: 1
	// held: 0
	// granted: 1
	// stale: 1
}

// gathered sums the values of one counter or gauge family.
func gathered(g prometheus.Gatherer, name string) float64 {
	fams, _ := g.Gather()
	var sum float64
	for _, mf := range fams {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// One Observer field feeds the Collector and a slog logger at once
// (baton.Observers); a batonotel Observer is added to the list the same
// way.
func Example_observers() {
	c := batonprom.New(batonprom.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	o := baton.Observers(batonslog.New(h, batonslog.Options{}), c)

	// What a fence does when it refuses a write, with Observer set to o.
	engine.Emit(context.Background(), o, baton.Event{Kind: baton.EventStaleRejected, Engine: "fence",
		Name: "orders/42", Resource: "orders", Token: 6, StoredToken: 7})
	fmt.Println("stale:", gathered(reg, "baton_stale_rejections_total"))
	// Output:
	// level=WARN msg="baton stale_rejected" event=stale_rejected engine=fence lock=orders/42 token=6 resource=orders stored_token=7
	// stale: 1
}
