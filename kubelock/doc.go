// Package kubelock is baton's Kubernetes engine: locks on Lease objects
// (coordination.k8s.io/v1) of one namespace, written with conditional
// updates through the caller's clientset (kubernetes.Interface), kept
// alive by package keeper. Recipes: Mutex (reentrant), RWMutex, Semaphore
// and Election, whose API and acquire loop are package leasekit's, shared
// by every lease engine; this package supplies the Lease layout, the
// grant rules and the watch that wakes waiters. Engine() is "kube".
//
// Open and New both return the *baton.Client every engine gives. What
// only this engine has is reached through baton.As: the engine's own
// *Client (Names), and the lock objects' own methods, such as a lease's
// fixed time (LockFor, TryLockFor), a semaphore's OnDisagreement and the
// name of a lock's Lease object:
//
//	m, _ := c.Mutex("orders/42")
//	if o, ok := baton.As[interface{ Lease() string }](m); ok {
//		fmt.Println("kubectl get lease", o.Lease())
//	}
//
// # Opening by URL
//
// Imported (import _ "github.com/baton-go/baton/kubelock"), the package
// serves baton.Open for k8s:// URLs:
//
//	k8s://                                      the pod's service account (rest.InClusterConfig), the pod's namespace
//	k8s://?namespace=locks                      the same, in namespace locks
//	k8s://?kubeconfig=/etc/kube.conf            a kubeconfig's current context and its namespace ("default" if none)
//	k8s://?kubeconfig=/etc/kube.conf&context=prod&namespace=locks
//	k8s://127.0.0.1:7443?kubeconfig=/etc/kube.conf  the same apiserver, dialled at 127.0.0.1:7443
//
// context= alone reads the default kubeconfig ($KUBECONFIG, else
// ~/.kube/config), as kubectl does. A URL carries no credentials, and the
// server comes from the kubeconfig or the pod: a host:port in the URL is
// only where to dial it (a proxy, a tunnel, a port-forward), and TLS
// still verifies the server's certificate by the host the kubeconfig (or
// the pod) names, unless baton.WithTLSServerName says otherwise. Open
// proves the connection and the credentials by listing the namespace's
// Leases, retried until the connect timeout; a refusal fails at once with
// baton.ErrAuth. Open's clientset has client-go's rate limiter off (baton
// paces its own requests); New takes your clientset as it is, so give its
// limiter room for two requests per held lock every TTL/3.
//
// The identity needs, on leases.coordination.k8s.io in the namespace: get,
// list and watch (reads, Inspect, the waiters' watch), create and update
// (grants, renewals, releases). baton never deletes a Lease (see
// "Tokens"). A missing verb fails the operation that needs it with
// baton.ErrAuth and the apiserver's message, which names the verb and the
// resource (`leases.coordination.k8s.io "x" is forbidden: User "u" cannot
// update resource "leases" …`). An apiserver that cannot be reached
// fails with baton.ErrUnavailable. Bearer tokens never appear in errors.
//
// # Objects
//
// Each lock name has one Lease. A name that is a valid object name (a
// DNS-1123 subdomain: lower-case letters, digits, '-' and '.', at most
// 253 characters) is the Lease's name, so that Election("my-controller")
// and client-go's LeaseLock "my-controller" are one Lease. Any other name
// ("orders/42", "Payments") is mapped to a readable prefix and a hash of
// the whole name: "orders-42-<16 base32 characters>". Every Lease baton
// writes carries:
//
//	label      baton.dev/lock                  128-bit hex hash of the full name: Inspect and the watch select by it
//	label      app.kubernetes.io/managed-by    baton
//	annotation baton.dev/name                  the full lock name (checked at every read: two names never share a Lease)
//	annotation baton.dev/token                 the name's token counter
//	annotation baton.dev/state                 holders and waiters, JSON (below)
//	spec       holderIdentity, acquireTime, renewTime, leaseDurationSeconds, leaseTransitions: as client-go writes them
//
// The state is a list of holders and a list of waiters, each entry
// {"o": owner, "k": kind, "t": token or ticket, "s": stamp, "d": lease
// time in ms, "p": holder record, "i": candidate ID, "n": semaphore N,
// "a": when written, unix ms}, kind one of mutex, read, write, permit,
// leader. Readers and permits are several entries of one Lease rather
// than a Lease each: Kubernetes writes one object atomically and no two,
// so the decision to grant (N permits, readers against a writer, the
// queue's order) and the minting of the token must be one conditional
// update of one object, or two clients could each see room for one more
// permit and both take it, or a reader take a token smaller than a
// writer's granted after it. A Lease holds a few thousand entries within
// the 256 KiB that an object's annotations may use.
//
// The spec is kept as client-go's LeaseLock keeps it, for kubectl (its
// HOLDER column is holderIdentity) and for client-go's LeaderElector:
// holderIdentity is the holder's owner (a mutex's, writer's or leader's
// grant), or the owners of the readers or permits joined by "," (the
// first four, then "+N"); a change of holder sets acquireTime and adds one
// to leaseTransitions; every grant and renewal sets renewTime and
// leaseDurationSeconds (the TTL rounded up to whole seconds, plus one:
// client-go compares records with whole-second times, so it cannot tell
// two renewals in one second apart, and may count a lease from up to a
// second before baton's last renewal); the last
// release writes what client-go's release writes: an empty
// holderIdentity and leaseDurationSeconds 1. A holderIdentity that is not
// what the state's holders project to was written by someone else (a
// client-go LeaderElector): it is a foreign holder, exclusive, and the
// state's holders have lost the Lease to it.
//
// # Acquire, renew, release
//
// Every write is a read, a decision, and an Update carrying the
// resourceVersion read (a Create for a new Lease): a Conflict or
// AlreadyExists is a race lost to another writer, never an error, and the
// decision is made again on a fresh read (an attempt gives up after four
// lost races and counts as refused: the server answered). An acquire
// grants when the rule of its recipe allows (waiters in ticket order; a
// foreign holder, or a holder of another recipe on the same name, counts
// as exclusive), replacing its waiting intent, if any, by a holder entry
// with the name's next token. A waiting acquire of a read/write lock, a
// semaphore or an election records an intent with the next token as its
// ticket. An intent lasts two TTLs, and its waiter refreshes it (its
// stamp) about every 2·TTL/3: every refresh is a write its name's holders
// must race, so a waiter that died keeps its place up to two TTLs rather
// than making live holders lose their renewals. Between refreshes an
// attempt is a read only, and a refresh that loses a race is made at the
// next attempt instead of being retried at once. A renewal adds one to its entry's
// stamp and sets renewTime; a release removes the owner's entries. Each
// write also drops the entries it judges expired. The keeper renews every
// lease of a client every TTL/3, Options.Parallel Leases at a time.
//
// # Expiry
//
// Expiry is judged as client-go's leaderelection judges it: an entry's
// lease runs out its lease time after THIS client observed its stamp
// change (a foreign holder: leaseDurationSeconds after it observed the
// spec record — holder, times, duration, transitions — change), on this
// client's monotonic clock. No client ever compares a time written by
// another machine with its own clock: renewTime and the entries' "a" are
// information only. So any offset between the nodes' clocks is tolerated;
// a holder whose renewTime was written an hour in the past (or future) by
// a skewed clock is honoured for one whole lease duration from when a
// client first sees it. What must hold is that clock rates agree within
// DriftMargin: a holder declares its lease Lost at the send time of its
// last confirmed renewal + TTL − DriftMargin, and nobody observes that
// renewal before it was written, so nobody takes the lock over before
// send time + TTL. The price is that a client that never saw a dead
// holder alive waits out one whole lease duration from its first read.
// Every read feeds the observations (the watch feeds those of the spec:
// a foreign holder's renewals); a waiter reads at least every TTL/4 and
// tries again when the first entry in its way runs out as it judges it,
// so it takes a dead holder's place at most TTL + TTL/4 after the
// holder's last renewal.
//
// # Tokens
//
// The fencing token is the baton.dev/token annotation: a counter that
// every grant (and every waiter's ticket) increments in the same
// conditional update that grants, so two grants never share a token and a
// later grant of the name always has a larger one, across every recipe
// and every holder of the name: the counter lives on the one Lease that
// every grant of the name writes. An annotation, not leaseTransitions:
// client-go's LeaderElector writes leaseTransitions too (it must, to stay
// a correct peer), and readers and permits would not fit one number of
// holder changes; leaseTransitions is kept exactly as client-go keeps it.
// baton never deletes a Lease: deleting one (kubectl delete lease)
// restarts its counter at 0, after which set Options.TokenFloor above
// every token issued. A grant by a client-go LeaderElector takes no
// token.
//
// # client-go
//
// A client-go LeaderElector (package tools/leaderelection with a
// resourcelock.LeaseLock) and a baton Election of the same name share one
// Lease and one rule of expiry, so they never both lead: baton's leader
// renews holderIdentity/renewTime every TTL/3, which a LeaderElector reads
// as alive; a LeaderElector's leadership is a foreign holder to baton,
// waited out by the same rule. Either takes over once the other released
// (an empty holderIdentity: Resign, ReleaseOnCancel) or its lease ran out.
// client-go's updates replace the spec and keep the annotations it read,
// so waiting baton candidates keep their place; a baton write between its
// read and its update makes its update conflict, which it retries.
//
// # Waiting
//
// A waiter retries with jittered exponential backoff (capped at TTL/4,
// and at the first expiry among the entries in its way, as it judges it)
// and is woken by a watch of the name's Leases (label selector), one per
// name per client, opened at the first wait and kept 10s after the last
// (one goroutine), reopened with a backoff when it breaks: a holder
// leaving (a release, a takeover by a foreign holder) or a waiter leaving
// the queue wakes the name's waiters; grants, renewals, refreshes and new
// waiters free nothing and wake none of them (Election.Observe is woken
// by every change of holder). The watch
// reads the spec and two annotations of each event (baton.dev/waiters
// counts the waiters), never the state: every watcher receives every
// write of the Lease. A waiter that cannot reach the apiserver for a
// whole TTL fails with baton.ErrSessionLost; one whose reads are answered
// but whose writes keep losing races is contended, not cut off.
//
// A mutex's waiters keep no intent: a release wakes them all, they race
// for the Lease, one conditional update wins and the others find it
// taken. So a mutex serves its waiters in no particular order, and
// Inspect lists none. Intents are entries of the name's one Lease, and
// each waiter's refreshes (three per intent's life) are writes the holder's
// renewals must then race: with fifty clients waiting on one mutex the
// holder lost its renewals, and its lease. The read/write lock, the
// semaphore and the election keep intents, since their order is part of
// their contract (a waiting writer holds new readers back); a name with
// dozens of such waiters makes its holders' writes race theirs.
//
// None of the lease timing survives a host that suspends (Go's monotonic
// clock stops); fencing tokens do.
package kubelock
