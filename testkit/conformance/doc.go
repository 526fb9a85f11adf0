// Package conformance runs baton's conformance suites (package batontest)
// against every engine from one table, through the API users hold: each
// client is a *baton.Client from baton.Open, on a URL whose every host is
// a fault proxy of the client's own (where a URL cannot name its hosts —
// Redlock's node timeout, a k8s:// URL's kubeconfig — the client is made
// by the engine's constructor on the proxies and handed over as its
// *baton.Client), and the remote entries the suites count are read
// through a second client's Inspect.
//
// It lives in the testkit module because it imports every engine, etcdlock
// and kubelock (modules of their own) among them; the root module
// requires no other baton module. It has no API: its tests are the
// package.
//
// The engines' own test packages keep the runs that need a deployment of
// their own (a Redis Cluster or Sentinel set, an etcd cluster, a ZooKeeper
// ensemble, SQL's counter-table variant) and the suites' negative
// controls.
package conformance
