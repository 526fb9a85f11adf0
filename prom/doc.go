// Package batonprom exports what baton does as Prometheus metrics: how
// long acquires wait and how they end, how many leases are held and
// suspended, how often leases are lost and why, how the keeper's renewals
// fare, and — the signal that matters most — how often a fenced resource
// refused a stale writer.
//
// A Collector is both the baton.Observer that engines, fence, idem and
// tasks report to and the prometheus.Collector that a registry scrapes:
//
//	c := batonprom.New(batonprom.Options{})
//	reg.MustRegister(c)
//	opts.Observer = c // an engine's, fence's, idem's or tasks' Options
//
// # Labels and cardinality
//
// Labels are bounded by default: engine, recipe, and a small class of
// result, cause or outcome that the Collector derives itself (errors.Is on
// baton's sentinels, never the error text). Lock names, owners, tokens and
// sessions are never labels by default: a program locking per order or
// tenant would create a series per name and keep it forever.
// Options.LockNames adds the name for programs with a few fixed names;
// wrapping the Collector in baton.HashNames then labels by a keyed
// pseudonym.
//
// # Series at 0
//
// A counter that first appears at 1 has no earlier sample for increase()
// or rate() to rise from, so an alert on it would miss the first event of
// every process. The Collector exposes at 0, before any event, every
// series whose labels are known in advance: stale rejections (engine
// "fence"), idempotency and task events for every outcome, and, for the
// engines named in Options.Engines, their per-lock counters and gauges
// for every recipe, result and cause, renewals and recovered creates.
//
// # Gauges
//
// The gauges (acquires waiting, leases held, leases suspended) are kept
// from the event stream, paired by Event.Acquire. Events of one lease come
// from several goroutines (the acquire loop, the engine's watcher, the
// releasing caller), so they may arrive out of order: a Suspended after
// the Lost that ended the lease, a Granted after a Lost declared at once.
// The Collector keeps one entry per live acquire or lease with a flag per
// gauge, moves a gauge only when a flag flips, under one mutex, and
// remembers the last few thousand ended leases to ignore their stragglers.
// A gauge therefore always equals a count of entries and never goes
// negative. Entries are bounded by Options.MaxTracked.
package batonprom
