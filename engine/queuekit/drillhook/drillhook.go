// Package drillhook carries fault-drill injection points into the queue
// recipes' acquire loop. The hooks travel in the context passed to Lock
// (TryLock, Acquire, Campaign), so no option of a user-facing type exists
// for them and an acquire without hooks pays one context lookup.
//
// Only drills, tests and benchmarks inject faults at these points;
// production code never sets them. The package is public only because
// baton's drill, benchmark and engine modules, which are modules of their
// own, set the hooks that package queuekit reads: it is no extension point.
package drillhook

import "context"

// Hooks are the injection points of one acquire. A nil field is skipped.
type Hooks struct {
	// BeforeWatch runs after the queue was read and before the watch on
	// the blocking entry is registered, with the blocker's key. Deleting
	// the blocker here is CURATOR-527: a watch set after the deletion must
	// still fire.
	BeforeWatch func(blocker string)
	// BeforeReturn runs after a grant and before Lock returns. Cancelling
	// the acquire context here checks that a grant nobody will receive is
	// given back, not leaked.
	BeforeReturn func()
}

type key struct{}

// With returns ctx carrying h for the acquires made with it (and, since a
// lease's context keeps its acquire context's values, for acquires made
// with that lease's context).
func With(ctx context.Context, h *Hooks) context.Context {
	return context.WithValue(ctx, key{}, h)
}

// From returns the hooks ctx carries, or nil.
func From(ctx context.Context) *Hooks {
	h, _ := ctx.Value(key{}).(*Hooks)
	return h
}
