package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var (
	_ queuekit.Inspector = (*Client)(nil)
	_ queuekit.Remover   = (*Client)(nil)
)

// subQueues are key prefixes under a lock that hold queues of their own
// (a semaphore's guard and permits).
var subQueues = []string{"locks", "leases"}

// Inspect lists the queue of name for an operator with one range read and
// one TimeToLive per distinct lease. Each entry is named
// "<lease hex>@<create revision>" (prefixed with "locks/" or "leases/" for
// a semaphore's queues), because a pooled lease reuses its key for later
// grants and only the revision tells them apart. Its token is the create
// revision (plus the token floor), exact for every entry. etcd keeps no
// creation time, so Age is unknown (0); the note gives the lease's TTL
// instead. Process is the holder record the entry's value carries (none
// for an election candidate, an etcdctl key or an older baton's). An entry whose lease the server no longer has is flagged
// DeadSession. A key under the lock (or under a semaphore's queue) whose
// name is not a lease ID, or which has no lease, is foreign (see isEntry):
// it follows the queues, flagged Foreign, at Position -1, and clean never
// removes it. It is the raw listing behind the *baton.Client's Inspect,
// reached through baton.As (as a queuekit.Inspector) for `baton clean`.
func (c *Client) Inspect(ctx context.Context, name string) ([]queuekit.EntryInfo, error) {
	r, err := c.inspect(ctx, name)
	return r.entries, err
}

// inspection is what Inspect reads, with what only the one shape
// (baton.Inspection) holds beyond the entries.
type inspection struct {
	entries []queuekit.EntryInfo
	// left is each live lease's time to live on the server, by lease hex.
	left map[string]time.Duration
	// permits is the N stored by a queue's leases, by queue ("leases/").
	permits map[string]int
}

func (c *Client) inspect(ctx context.Context, name string) (inspection, error) {
	if err := c.checkOpen(); err != nil {
		return inspection{}, err
	}
	n, err := engine.ValidateName(name)
	if err != nil {
		return inspection{}, err
	}
	resp, err := c.cli.Get(ctx, n+"/", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return inspection{}, opErr(ctx, "inspect", n, err)
	}
	queues := map[string][]queuekit.EntryInfo{}
	r := inspection{left: map[string]time.Duration{}, permits: map[string]int{}}
	permits := r.permits
	leases := map[int64][]*queuekit.EntryInfo{}
	var foreign []queuekit.EntryInfo
	for _, kv := range resp.Kvs {
		rel := strings.TrimPrefix(string(kv.Key), n+"/")
		sub, hex := "", rel
		if s, rest, ok := strings.Cut(rel, "/"); ok {
			if !slices.Contains(subQueues, s) {
				continue // another lock's key, below this name
			}
			sub, hex = s+"/", rest
		}
		if !isEntry(hex, kv.Lease) {
			foreign = append(foreign, foreignInfo(rel, kv.CreateRevision, clientv3.LeaseID(kv.Lease)))
			continue
		}
		kind, np := entryKind(kv.Value)
		if np > 0 && permits[sub] == 0 {
			permits[sub] = np
		}
		tok, err := engine.FloorToken(uint64(kv.CreateRevision), c.opts.TokenFloor)
		if err != nil {
			return inspection{}, fmt.Errorf("etcdlock: inspect %q: %w", n, err)
		}
		queues[sub] = append(queues[sub], queuekit.EntryInfo{
			Entry:   sub + hex + "@" + strconv.FormatInt(kv.CreateRevision, 10),
			Kind:    kind,
			Token:   tok,
			Session: leaseHex(clientv3.LeaseID(kv.Lease)),
			Process: process(kv.Value),
		})
	}
	var out []queuekit.EntryInfo
	for _, sub := range []string{"", "locks/", "leases/"} {
		q := queues[sub]
		queuekit.MarkHolders(q, permits[sub])
		out = append(out, q...)
	}
	for i := range out {
		id, _ := strconv.ParseInt(out[i].Session, 16, 64)
		leases[id] = append(leases[id], &out[i])
	}
	for id, es := range leases {
		ttl, err := c.cli.TimeToLive(ctx, clientv3.LeaseID(id))
		var note string
		dead := false
		switch {
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			dead, note = true, "lease "+leaseHex(clientv3.LeaseID(id))+" not found on the server"
		case err != nil:
			if ctx.Err() != nil {
				return inspection{}, opErr(ctx, "inspect lease of", n, err)
			}
			note = "lease state unknown: " + err.Error()
		case ttl.TTL <= 0:
			dead, note = true, "lease "+leaseHex(clientv3.LeaseID(id))+" expired"
		default:
			note = fmt.Sprintf("lease TTL %ds, %ds left", ttl.GrantedTTL, ttl.TTL)
			r.left[leaseHex(clientv3.LeaseID(id))] = time.Duration(ttl.TTL) * time.Second
		}
		for _, e := range es {
			e.DeadSession = dead
			e.AddNote(note)
		}
	}
	r.entries = append(out, foreign...)
	return r, nil
}

// foreignInfo describes a foreign key for Inspect: named as entries are
// ("<rel>@<create revision>"), with no kind, token or position. Its note
// says why it is foreign, and that etcdctl lock and concurrency.Mutex,
// which take every key under the prefix for a contender, wait behind it:
// the one reason a lock can look stuck to them while baton's queue is free.
func foreignInfo(rel string, rev int64, lease clientv3.LeaseID) queuekit.EntryInfo {
	e := queuekit.EntryInfo{Position: -1, Entry: rel + "@" + strconv.FormatInt(rev, 10), Foreign: true}
	why := "its name is not a lease ID"
	if lease != 0 {
		e.Session = leaseHex(lease)
	} else {
		why = "it has no lease (every contender's key is on its lease), so it never expires"
	}
	e.AddNote("foreign key under the lock's prefix: " + why + "; no recipe wrote it, baton ignores it, " +
		"but etcdctl lock and concurrency.Mutex on this name wait behind it for as long as it exists; " +
		"baton never removes it (etcdctl del does, if it is stray)")
	return e
}

// entryKind reads an entry's kind from its value, and the N a baton
// semaphore lease stores after its marker ("lease-baton:permits=3 host=…"),
// 0 when absent.
func entryKind(v []byte) (queuekit.Kind, int) {
	k := valueKind(v)
	if k == queuekit.KindLease {
		n, _ := queuekit.ParsePermits(entryData(k, v))
		return k, n
	}
	return k, 0
}

// Remove deletes exactly the entry "<lease hex>@<create revision>" (with
// its "locks/" or "leases/" prefix, if any) of name, in a transaction
// guarded by the create revision, so a later grant that reuses the key is
// never touched, and by the key having a lease: a key without one is
// foreign (see isEntry), someone else's data, and is refused with
// baton.ErrInvalidOption like a badly named one. A key already gone (or
// re-created) is success. It is reached through baton.As (as a
// queuekit.Remover).
func (c *Client) Remove(ctx context.Context, name, entry string) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	n, err := engine.ValidateName(name)
	if err != nil {
		return err
	}
	rel, rev, ok := parseEntry(entry)
	if !ok {
		return fmt.Errorf("etcdlock: remove %q from %q: want an entry as inspect names it (<lease hex>@<revision>): %w",
			entry, name, baton.ErrInvalidOption)
	}
	key := n + "/" + rel
	resp, err := c.cli.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(key), "=", rev),
		clientv3.Compare(clientv3.LeaseValue(key), "!=", clientv3.NoLease),
	).Then(clientv3.OpDelete(key)).Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).Commit()
	if err != nil {
		return opErr(ctx, "remove", key, err)
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 1 && kvs[0].CreateRevision == rev && kvs[0].Lease == 0 {
			return fmt.Errorf("etcdlock: remove %q from %q: a key without a lease is foreign, not baton's to remove: %w",
				entry, name, baton.ErrInvalidOption)
		}
	}
	return nil
}

// parseEntry reads an entry name as Inspect writes it: the key relative
// to the lock ("<lease hex>", or under a semaphore's "locks/" or
// "leases/") and its create revision. A name whose suffix is not a lease
// ID is foreign and not ok: baton removes only its own kind of keys.
func parseEntry(entry string) (rel string, rev int64, ok bool) {
	rel, revText, ok := strings.Cut(entry, "@")
	if !ok {
		return "", 0, false
	}
	rev, err := strconv.ParseInt(revText, 10, 64)
	if err != nil || rev <= 0 {
		return "", 0, false
	}
	hex := rel
	if sub, rest, ok := strings.Cut(rel, "/"); ok {
		if !slices.Contains(subQueues, sub) {
			return "", 0, false
		}
		hex = rest
	}
	if _, ok := leaseSuffix(hex); !ok {
		return "", 0, false
	}
	return rel, rev, true
}
