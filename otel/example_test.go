package batonotel_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batonslog"
	"github.com/baton-go/baton/engine"
	batonotel "github.com/baton-go/baton/otel"
)

// The Observer is given as the Observer of every engine, fence, idem and
// tasks value. Here a lease built as an engine builds it stands in for an
// engine's grant, and an in-memory exporter shows the spans.
func Example() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	o, err := batonotel.New(batonotel.Options{TracerProvider: tp}) // global MeterProvider
	if err != nil {
		panic(err)
	}

	ctx, req := tp.Tracer("app").Start(context.Background(), "handle order")
	// What an engine does when it grants, with Options.Observer set to o.
	id := engine.NextAcquireID()
	engine.Emit(ctx, o, baton.Event{Kind: baton.EventAcquireStarted, Engine: "mem", Recipe: "mutex", Name: "orders/42", Acquire: id})
	l, ctl := engine.NewLease(ctx, engine.Grant{Name: "orders/42", Engine: "mem", Token: 7, Observer: o, Recipe: "mutex", Acquire: id})
	engine.Emit(ctx, o, baton.Event{Kind: baton.EventGranted, Engine: "mem", Recipe: "mutex", Name: "orders/42", Acquire: id, Token: 7, Depth: 1})

	ctl.Suspend() // the engine lost touch with its server
	ctl.Lose(nil) // and the session expired
	_ = l.Release(ctx)
	req.End()

	for _, s := range exp.GetSpans() {
		fmt.Println(s.Name, s.Status.Code, len(s.Events), "events")
	}
	// Output:
	// baton.acquire Unset 0 events
	// baton.hold Error 2 events
	// handle order Unset 0 events
}

// One Observer field feeds the Observer and a slog logger at once
// (baton.Observers); a batonprom Collector is added to the list the same
// way. The stale rejection becomes an event on the write's span and a
// warning in the log.
func Example_observers() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	traces, err := batonotel.New(batonotel.Options{TracerProvider: tp})
	if err != nil {
		panic(err)
	}
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	o := baton.Observers(batonslog.New(h, batonslog.Options{}), traces)

	// What a fence does when it refuses a write, with Observer set to o.
	ctx, write := tp.Tracer("app").Start(context.Background(), "write order")
	engine.Emit(ctx, o, baton.Event{Kind: baton.EventStaleRejected, Engine: "fence",
		Name: "orders/42", Resource: "orders", Token: 6, StoredToken: 7})
	write.End()
	for _, s := range exp.GetSpans() {
		fmt.Println(s.Name, len(s.Events), "event:", s.Events[0].Name)
	}
	// Output:
	// level=WARN msg="baton stale_rejected" event=stale_rejected engine=fence lock=orders/42 token=6 resource=orders stored_token=7
	// write order 1 event: baton.stale_rejected
}
