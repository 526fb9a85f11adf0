// Package obsview is what baton's metrics adapters (the prom and otel
// modules) share about the event stream: the tracker that turns events
// into live counts of waiting acquires and held and suspended leases, and
// the classifiers that turn errors and outcomes into bounded label values.
// An adapter for another metrics system can use it the same way.
//
// Both adapters must read the stream the same way, or a dashboard built on
// one would disagree with the other on the same run; keeping the logic
// here makes that so by construction. It lives in the root module, beside
// the events it reads, so that a release that changes them changes it in
// step. The package imports only the standard library and baton's own
// packages, so the root module gains no dependency from it.
package obsview
