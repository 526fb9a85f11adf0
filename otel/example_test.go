package batonotel_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/baton-go/baton"
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
	id := baton.NextAcquireID()
	baton.Emit(ctx, o, baton.Event{Kind: baton.EventAcquireStarted, Engine: "mem", Recipe: "mutex", Name: "orders/42", Acquire: id})
	l, ctl := baton.NewLease(ctx, baton.Grant{Name: "orders/42", Engine: "mem", Token: 7, Observer: o, Recipe: "mutex", Acquire: id})
	baton.Emit(ctx, o, baton.Event{Kind: baton.EventGranted, Engine: "mem", Recipe: "mutex", Name: "orders/42", Acquire: id, Token: 7, Depth: 1})

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
