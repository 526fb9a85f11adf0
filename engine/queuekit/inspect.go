package queuekit

import (
	"context"
	"time"

	"github.com/baton-go/baton"
)

// EntryInfo describes one entry of a lock's queue as an operator sees it
// (`baton inspect`, `baton clean`). It is a snapshot: by the time it is
// printed the queue may have moved on.
type EntryInfo struct {
	// Position is the entry's index in its queue, from 0. A semaphore on
	// ZooKeeper has two queues (its guard "locks/" and its "leases/"); each
	// counts from 0.
	Position int
	// Entry names the entry relative to the lock's directory, exactly as
	// Remover.Remove takes it: "_c_<uuid>-lock-0000000007" or
	// "leases/_c_<uuid>-lease-0000000002" on ZooKeeper,
	// "694d8c2a1f0e3b21@1234" (lease hex @ create revision) on etcd, whose
	// keys are reused by later grants of a pooled lease.
	Entry string
	// Kind is the recipe marker of the entry.
	Kind Kind
	// Session is the owning session or lease as the engine names it ("" for
	// none: a node or key no session will ever remove).
	Session string
	// Token is the entry's fencing token, 0 when the engine cannot tell it
	// from outside (ZooKeeper: the token is the directory's pzxid at the
	// holder's granting read, which no later read recovers; see
	// TokenBounder).
	Token uint64
	// Age is how long the entry has existed, 0 when unknown (etcd keeps no
	// creation time).
	Age time.Duration
	// Holder reports that the recipe's rule grants the entry: the first
	// entry for a mutex, a write lock or a leader; a reader with no
	// exclusive entry before it; a lease among the first N permits when N
	// is known (Note says when it is not).
	Holder bool
	// Duplicate marks a provable protected-create duplicate: an entry
	// sharing its "_c_<uuid>-" prefix and its owning session with a smaller
	// entry (a create retried after a lost response). Only the smallest of
	// such a group is the attempt's real entry. Entries sharing a prefix
	// across sessions are not flagged (Note says so): which one the client
	// uses cannot be told.
	Duplicate bool
	// DeadSession marks an entry whose owning session no longer exists, or
	// which no session owns at all (a persistent node or a key without a
	// lease: some client's bug). Nothing will ever remove it by itself.
	DeadSession bool
	// Foreign marks a node or key under the lock that is not an entry of
	// any recipe (etcd: a key whose name is not a lease ID, such as
	// "<name>/-1"). It takes no part in the queue — it blocks nobody and
	// is never granted — so its Position is -1, and Remove refuses it:
	// baton deletes only its own kind of entries.
	Foreign bool
	// Note explains flags and unknowns in a few words.
	Note string
	// Process is the holder record the entry was created with (the
	// engine's node data or key value, engine.ParseProcess), zero when
	// it has none.
	Process baton.Process
}

// Inspector reads a lock's queue without taking part in it: it creates
// nothing and holds nothing.
type Inspector interface {
	// Inspect returns every entry under the lock directory of name, queue
	// by queue, each sorted by its engine's order. A lock without entries
	// returns an empty slice.
	Inspect(ctx context.Context, name string) ([]EntryInfo, error)
}

// Remover deletes single entries for an operator (`baton clean`).
type Remover interface {
	// Remove deletes exactly entry (as EntryInfo.Entry names it) under the
	// lock directory of name, and nothing else: never the directory, never
	// a path outside it, never a later entry that reuses the key. An entry
	// already gone is success, so a retry after an unknown result is safe.
	Remove(ctx context.Context, name, entry string) error
}

// TokenBounder is implemented by engines that cannot tell a holder's token
// from outside but can bound it: TokenBound returns a value at least as
// large as the token of every grant of name so far, and smaller than the
// token of any grant made after the call. Raising a resource's fence to it
// rejects every current holder while letting the next one in.
type TokenBounder interface {
	TokenBound(ctx context.Context, name string) (uint64, error)
}

// MarkHolders sets Position and Holder on one queue, sorted in queue order,
// by the rule the recipes use. Exclusive entries (mutex, write, leader
// latch) hold only at the head; a reader holds when no exclusive entry is
// before it; a lease holds among the first permits entries of its queue,
// and when permits is 0 (unknown) its Holder stays false and Note says so.
func MarkHolders(q []EntryInfo, permits int) {
	exclusiveBefore := false
	for i := range q {
		e := &q[i]
		e.Position = i
		switch e.Kind {
		case KindRead:
			e.Holder = !exclusiveBefore
		case KindLease:
			if permits > 0 {
				e.Holder = i < permits
			} else {
				e.AddNote("holds if among the first N leases (N is not stored)")
			}
		default:
			e.Holder = i == 0
			exclusiveBefore = true
		}
	}
}

// AddNote appends a clause to e's note, separated by "; ". Engines use it
// to explain each flag they set.
func (e *EntryInfo) AddNote(s string) {
	if e.Note != "" {
		e.Note += "; "
	}
	e.Note += s
}
