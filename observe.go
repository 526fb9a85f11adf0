package baton

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// Observer receives what baton does: acquires, grants, suspensions,
// losses, releases, keeper rounds, and — the best signal there is — writes
// a fenced resource refused as stale. Every engine's, fence's, idem's and
// tasks' options have one Observer field; nil (the default) costs nothing
// but a nil check. Observers combines several observers into one.
//
// Events are delivered synchronously on the goroutine that made them: an
// acquire loop, a keeper round, a lease state change, a fenced write.
// Observe must therefore be fast and must not block or call back into
// baton. It may be called from many goroutines at once. ctx is the
// acquire's context for acquire events, the lease's context for lease
// events, the caller's context for resource events, and
// context.Background for background work (keeper rounds); tracing
// adapters take their parent span from it.
//
// Adapters: package batonslog (log/slog) in this module; Prometheus and
// OpenTelemetry adapters are modules of their own, so that a program pulls
// only the one it imports.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f(ctx, e).
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// EventKind says what an Event reports.
type EventKind uint8

// The kinds of events. The fields each kind fills are listed with it;
// Engine and Name (or Resource) are set on all of them.
const (
	_ EventKind = iota
	// EventAcquireStarted: an acquire began. Acquire, Recipe.
	EventAcquireStarted
	// EventAcquireRetry: an attempt did not grant and the acquire waits or
	// retries. Acquire, Recipe, Attempt, Err (nil when the lock was
	// simply taken), Position (queue engines: entries ahead, -1 unknown).
	EventAcquireRetry
	// EventGranted: the acquire returned a lease. Acquire, Recipe, Token,
	// Owner, Session, Wait, Depth (1; more when the grant re-entered a
	// lease the context already held, in which case Reentered is true).
	EventGranted
	// EventAcquireFailed: the acquire returned an error (cancelled, deadline,
	// unavailable, not acquired by a TryLock, closed). Acquire, Recipe,
	// Wait, Err.
	EventAcquireFailed
	// EventSuspended: a held lease's ownership is in doubt. Acquire, Token,
	// Owner, Session, Hold.
	EventSuspended
	// EventResumed: a suspended lease is held again. Acquire, Token, Owner,
	// Session, Hold, Duration (how long it was suspended).
	EventResumed
	// EventLost: a lease ended without being released. Acquire, Token, Owner,
	// Session, Hold, Err (the cause, wrapping ErrLost), Lead (for lease
	// engines: how long before the earliest moment the server could
	// expire the grant the loss was declared; 0 unknown).
	EventLost
	// EventReleased: the last hold of a lease was released. Acquire, Token,
	// Owner, Session, Hold.
	EventReleased
	// EventReleaseFailed: a release failed, its outcome unknown. The
	// lease's EventLost follows, and the engine removes the entry in the
	// background. Acquire, Token, Owner, Err.
	EventReleaseFailed
	// EventRenewal: one keeper renewal batch answered (or failed). Count (leases
	// in the batch), Duration (round-trip time), Late (the answer came
	// after the keeper stopped waiting), Err.
	EventRenewal
	// EventStaleRejected: a fenced resource refused a write. Resource, Token,
	// Owner (the writer's), StoredToken, StoredOwner, Name (the lock name,
	// when the write's context told it: the lease's context, or one named
	// with fence.WithLockName).
	EventStaleRejected
	// EventRecovered: an acquire whose create had an unknown outcome found its
	// entry and kept it (ZooKeeper protected create), removing Count
	// duplicates. Acquire (when the acquire is observed), Session, Owner
	// (the adopted entry), Count.
	EventRecovered
	// EventIdempotency: an idempotency key changed state or was looked up.
	// Resource (the key), Owner (the store's owner), Outcome ("hit",
	// "requesting", "success", "failed", "unknown", "settled", "manual",
	// "conflict", "resolved"; see idem.Store.Do), Err (the error the call
	// returned, for "failed", "unknown", "manual", "conflict" and a failed
	// "hit").
	EventIdempotency
	// EventTask: a durable task changed hands or was written. Resource (the
	// task), Token (the writer's epoch), Owner, Outcome ("claimed",
	// "takeover", "checkpoint", "completed", "failed", "retry", "stale",
	// "lost"); on a takeover StoredToken and StoredOwner (the owner
	// replaced) and Duration (how long that owner had written nothing, no
	// checkpoint and no heartbeat: the least age of its last checkpoint);
	// on "stale" StoredToken and StoredOwner (the task's owner now) and Err.
	EventTask
)

var kindNames = [...]string{
	EventAcquireStarted: "acquire_started",
	EventAcquireRetry:   "acquire_retry",
	EventGranted:        "granted",
	EventAcquireFailed:  "acquire_failed",
	EventSuspended:      "suspended",
	EventResumed:        "resumed",
	EventLost:           "lost",
	EventReleased:       "released",
	EventReleaseFailed:  "release_failed",
	EventRenewal:        "renewal",
	EventStaleRejected:  "stale_rejected",
	EventRecovered:      "recovered",
	EventIdempotency:    "idempotency",
	EventTask:           "task",
}

// String returns the kind's snake_case name, as adapters use it in
// messages and metric labels.
func (k EventKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one thing baton did. Which fields are set depends on Kind (see
// the EventKind constants); the others are zero. Every event carries the
// engine and the lock name (or the resource), and lease events carry the
// token and owner, so a stale rejection at a resource can be traced back
// to the grant it came from.
type Event struct {
	Kind   EventKind
	Time   time.Time // when it happened
	Engine string    // "zk", "etcd", "redis", "redlock", "postgres", "mysql", "sqlite", "mem"; "fence", "idem", "tasks" for resource events
	Name   string    // the lock name; hashed when the observer is wrapped by HashNames
	Recipe string    // "mutex", "read", "write", "semaphore", "election"

	// Acquire identifies one acquire and the lease it granted, unique in
	// the process (NextAcquireID), so adapters can pair an acquire's start
	// with its end and a lease's grant with its loss or release.
	Acquire uint64
	Attempt int // attempts made so far (AcquireRetry)

	Token   uint64 // the fencing token
	Owner   string // the grant's owner (entry path, owner value); hashed by HashNames
	Session string // the engine session (ZooKeeper session ID, etcd lease ID), when there is one

	Position  int  // entries ahead in the queue; -1 unknown
	Depth     int  // reentrant hold count after a grant
	Reentered bool // the grant re-entered a lease the context held

	Wait     time.Duration // from the acquire's start
	Hold     time.Duration // from the grant
	Duration time.Duration // kind-specific (see EventKind)
	Lead     time.Duration // Lost: margin before the server-side expiry
	Late     bool          // Renewal: the answer came after the wait
	Count    int           // kind-specific (see EventKind)

	Resource    string // fence, idem, tasks: the resource, key or task
	StoredToken uint64 // StaleRejected: the token the resource holds
	StoredOwner string // StaleRejected: the owner the resource holds
	Outcome     string // Idempotency, Task

	Err error // the error or cause, where the kind has one
}

// HashNames returns an Observer that passes every event to o with each
// field that can carry a lock name replaced by a keyed hash of it ("h:" and
// 16 hex digits of HMAC-SHA256(key, value)):
//
//   - Name and Resource (fenced resources, idempotency keys and task keys
//     carry the same IDs);
//   - Owner and StoredOwner, whole: engines build owners from the lock's
//     path (ZooKeeper and memlock "<name>/lock-0000000001", etcd
//     "<prefix><name>/…@<revision>"), and a random owner hashes to a
//     stable pseudonym just as well, so a stale rejection's Owner still
//     matches the Owner of the grant it came from;
//   - Session and Err's text, where they contain the plain Name, Resource,
//     Owner or StoredOwner: each occurrence is replaced by its hash, and
//     the rest (a session ID, an error's wording) stays readable. Err is
//     then an error with the scrubbed text that unwraps to the original,
//     so errors.Is and errors.As still classify it; an observer that
//     formats an unwrapped error itself sees the plain text.
//
// Engine, Recipe and Outcome are fixed vocabularies and stay as they are.
//
// Lock names often hold tenant IDs or payment keys; logs, metrics and
// traces then carry a stable pseudonym instead, the same for the same
// value and key, which whoever holds the key can recompute to find a
// name's events. A nil o returns nil.
func HashNames(key []byte, o Observer) Observer {
	if o == nil {
		return nil
	}
	return hashed{key: append([]byte(nil), key...), o: o}
}

type hashed struct {
	key []byte
	o   Observer
}

func (h hashed) Observe(ctx context.Context, e Event) {
	// Longest first: an owner usually contains the name, so it must be
	// replaced whole before the name inside it is.
	var plain [4]string
	var n int
	for _, f := range []*string{&e.Owner, &e.StoredOwner, &e.Resource, &e.Name} {
		if *f != "" {
			plain[n] = *f
			n++
			*f = h.hash(*f)
		}
	}
	sortByLen(plain[:n])
	if e.Session != "" {
		e.Session = h.scrub(e.Session, plain[:n])
	}
	if e.Err != nil {
		if msg := e.Err.Error(); n > 0 {
			if s := h.scrub(msg, plain[:n]); s != msg {
				e.Err = &scrubbedError{msg: s, err: e.Err}
			}
		}
	}
	h.o.Observe(ctx, e)
}

// scrub replaces each of plain (longest first) in s by its hash.
func (h hashed) scrub(s string, plain []string) string {
	for _, p := range plain {
		if strings.Contains(s, p) {
			s = strings.ReplaceAll(s, p, h.hash(p))
		}
	}
	return s
}

func sortByLen(s []string) {
	for i := 1; i < len(s); i++ { // at most four: insertion sort
		for j := i; j > 0 && len(s[j]) > len(s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func (h hashed) hash(s string) string {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(s))
	return "h:" + hex.EncodeToString(m.Sum(nil)[:8])
}

// scrubbedError is an event's Err with the names in its text hashed.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
