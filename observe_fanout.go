package baton

import "context"

// Observers returns one Observer that passes every event to each of os, so
// that one Options.Observer field can feed a logger, metrics and traces at
// once:
//
//	opts.Observer = baton.Observers(batonslog.New(h, batonslog.Options{}), promCollector, otelObserver)
//
// Nil entries are skipped. With no non-nil entry it returns nil, and with
// one it returns that one unchanged, so that an engine's nil check (the
// whole cost of observing nothing) and a single observer's direct call
// stay as cheap as without Observers. Entries that are themselves made by
// Observers are flattened.
//
// Each event goes to the observers in the order given, one after the
// other, on the goroutine that emitted it, with the same ctx and an
// identical copy of the Event. A panicking observer is not recovered: the
// panic reaches the emitter, as it would with that observer alone, and
// the observers after it do not see the event. Observers must therefore
// not panic, and each one's cost adds to the emitter's.
//
// To hash lock names for some observers only, wrap those:
// Observers(HashNames(key, metrics), localLog).
func Observers(os ...Observer) Observer {
	var all fanout
	for _, o := range os {
		switch o := o.(type) {
		case nil:
		case fanout:
			all = append(all, o...)
		default:
			all = append(all, o)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return all
}

// fanout is what Observers returns for two or more observers. Its slice
// is never changed after Observers built it.
type fanout []Observer

func (f fanout) Observe(ctx context.Context, e Event) {
	for _, o := range f {
		o.Observe(ctx, e)
	}
}
