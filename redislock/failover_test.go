package redislock_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/faultproxy"
	"github.com/baton-go/baton/fence/redisfence"
	"github.com/baton-go/baton/redislock"
)

// replicaPair wires the private replica to replicate the private primary
// through a fault proxy (REPLICAOF proxyhost proxyport) and waits for the
// link. Cleanup stops the replication and empties both servers.
func replicaPair(t *testing.T) (primary, replica *redis.Client, link *faultproxy.Proxy) {
	t.Helper()
	pa, ra := testenv.RedisPair(t)
	primary, replica = redisClient(t, pa), redisClient(t, ra)
	ctx := context.Background()
	reset := func() {
		_ = replica.ReplicaOf(ctx, "NO", "ONE").Err()
		_ = primary.FlushAll(ctx).Err()
		_ = replica.FlushAll(ctx).Err()
	}
	reset()
	link, err := faultproxy.Start(pa)
	if err != nil {
		t.Fatalf("faultproxy.Start(%q) = %v", pa, err)
	}
	t.Cleanup(link.Close)
	t.Cleanup(reset) // before the proxy closes: the replica stops first
	host, port, _ := net.SplitHostPort(link.Addr)
	if err := replica.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatalf("REPLICAOF %s = %v", link.Addr, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, err := replica.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not linked to %s within 15s: %v\n%s", ra, link.Addr, err, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return primary, replica, link
}

// cutReplication blackholes the replication link and returns once it is
// certainly cut: bytes the proxy was already forwarding when Blackhole
// returned may still pass, and the primary may not have sent a write made
// before it yet. A probe written now that does not reach the replica
// proves the cut.
func cutReplication(t *testing.T, link *faultproxy.Proxy, primary, replica *redis.Client) {
	t.Helper()
	if err := link.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	ctx := context.Background()
	var probes []string
	for i := range 50 {
		probe := "probe:" + engine.NewOwnerID()
		if err := primary.Set(ctx, probe, i, time.Minute).Err(); err != nil {
			t.Fatalf("SET %s = %v", probe, err)
		}
		probes = append(probes, probe)
		time.Sleep(300 * time.Millisecond)
		// Two probes in a row missing (the first one for 600ms) is a cut.
		if n, _ := replica.Exists(ctx, probes...).Result(); n == 0 && len(probes) >= 2 {
			return
		} else if n > 0 {
			probes = probes[:0]
		}
	}
	t.Fatalf("replication still flowing 10s after Blackhole")
}

// TestReplicaAcks: with ReplicaAcks=1 an acquire succeeds while the
// replica follows, and fails with ErrNotReplicated — leaving no key —
// once the replication link is cut.
func TestReplicaAcks(t *testing.T) {
	primary, replica, link := replicaPair(t)
	// A generous WAIT timeout: the replica's acknowledgement must make it
	// on a loaded CI box.
	c := newClient(t, primary, redislock.Options{Prefix: "acks", TTL: 5 * time.Second, ReplicaAcks: 1, ReplicaAckTimeout: time.Second})
	name := uniqueName("acks")
	l := lock(t, c, name)
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release = %v", err)
	}
	cutReplication(t, link, primary, replica)
	m, _ := c.Mutex(name)
	for _, wait := range []bool{false, true} {
		var err error
		if wait {
			_, err = m.Lock(opCtx(t, 5*time.Second))
		} else {
			_, err = m.TryLock(opCtx(t, 5*time.Second))
		}
		if !errors.Is(err, redislock.ErrNotReplicated) || !errors.Is(err, baton.ErrUnavailable) {
			t.Errorf("acquire (wait=%v) with the replication cut = %v, want %v and %v", wait, err, redislock.ErrNotReplicated, baton.ErrUnavailable)
		}
		if n, _ := primary.Exists(context.Background(), keyOf(t, m)).Result(); n != 0 {
			t.Errorf("key %s exists after the unacknowledged acquire (wait=%v), want it released", keyOf(t, m), wait)
		}
	}
}

// TestFailoverRow6 reproduces a failover onto a replica
// that missed the grant. Without ReplicaAcks the promoted replica grants
// the same lock again — a double grant — with a rewound counter, so the
// second holder's token is not greater than the first's; the fenced
// resource still rejects its write (an equal token from another owner is
// stale), while the unfenced twin accepts it (the negative control). With
// ReplicaAcks=1 the first acquire fails and unwinds instead. TokenFloor
// re-bases the promoted server's tokens above every token handed out.
func TestFailoverRow6(t *testing.T) {
	primary, replica, link := replicaPair(t)
	resource := redisClient(t, redisAddr(t)) // the protected data lives elsewhere
	rprefix := testPrefix(t, resource)
	fenced := redisfence.Fence{Client: resource, Prefix: rprefix + ":fenced:"}
	unfenced := redisfence.Unfenced{Fence: redisfence.Fence{Client: resource, Prefix: rprefix + ":unfenced:"}}
	ctx := opCtx(t, 30*time.Second)
	name := uniqueName("row6")
	const prefix = "row6"

	// Something replicated first, so the counter of the slot exists on both.
	old := newClient(t, primary, redislock.Options{Prefix: prefix, TTL: 5 * time.Second, ReplicaAcks: 1, ReplicaAckTimeout: time.Second})
	l0 := lock(t, old, name)
	_ = l0.Release(ctx)
	if n, err := primary.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 after the release = %d, %v, want the replica caught up", n, err)
	}

	cutReplication(t, link, primary, replica)
	acked := newClient(t, primary, redislock.Options{Prefix: prefix, ReplicaAcks: 1, ReplicaAckTimeout: 200 * time.Millisecond})
	ma, _ := acked.Mutex(name)
	if _, err := ma.TryLock(ctx); !errors.Is(err, redislock.ErrNotReplicated) {
		t.Fatalf("TryLock with ReplicaAcks=1 and the replication cut = %v, want %v", err, redislock.ErrNotReplicated)
	}
	if n, _ := primary.Exists(ctx, keyOf(t, ma)).Result(); n != 0 {
		t.Fatalf("the unacknowledged grant was not unwound: %s exists", keyOf(t, ma))
	}

	// The replica is promoted (REPLICAOF NO ONE stops it applying the
	// replication stream: from here on nothing the old primary does can
	// reach it, whatever the proxy still had in flight). A client that has
	// not noticed the failover still acquires on the old primary.
	if err := replica.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatalf("REPLICAOF NO ONE = %v", err)
	}
	// Had the cut taken effect late, the acknowledged-nowhere grant (TTL
	// 1.5s) may have reached the replica without its unwind: it expires.
	deadline := time.Now().Add(5 * time.Second)
	for n, _ := replica.Exists(ctx, keyOf(t, ma)).Result(); n != 0; n, _ = replica.Exists(ctx, keyOf(t, ma)).Result() {
		if time.Now().After(deadline) {
			t.Fatalf("%s still on the promoted replica after 5s", keyOf(t, ma))
		}
		time.Sleep(50 * time.Millisecond)
	}
	plain := newClient(t, primary, redislock.Options{Prefix: prefix, TTL: 10 * time.Second})
	a := lock(t, plain, name)
	if err := fenced.Set(ctx, "res", a.Token(), a.Owner(), "A", nil); err != nil {
		t.Fatalf("fenced write of the first holder = %v", err)
	}
	if err := unfenced.Set(ctx, "res", a.Token(), a.Owner(), "A", nil); err != nil {
		t.Fatalf("unfenced write of the first holder = %v", err)
	}

	// Other clients move to the promoted replica, which never saw A's grant.
	promoted := newClient(t, replica, redislock.Options{Prefix: prefix, TTL: 10 * time.Second})
	mb, _ := promoted.Mutex(name)
	b, err := mb.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock on the promoted replica = %v, want the (documented) double grant", err)
	}
	if a.State() != baton.Held {
		t.Fatalf("first holder %v, want still Held (its primary is alive in this drill)", a.State())
	}
	t.Logf("double grant after failover: A token %d owner %s…, B token %d owner %s… (counter rewound)", a.Token(), a.Owner()[:8], b.Token(), b.Owner()[:8])
	if b.Token() > a.Token() {
		t.Errorf("B's token %d > A's %d: the counter was not rewound, the drill did not reproduce the failover", b.Token(), a.Token())
	}

	err = fenced.Set(ctx, "res", b.Token(), b.Owner(), "B", nil)
	if !errors.Is(err, baton.ErrStaleToken) {
		t.Errorf("fenced write of B (token %d ≤ A's %d, another owner) = %v, want %v", b.Token(), a.Token(), err, baton.ErrStaleToken)
	}
	if v, _ := resource.Get(ctx, fenced.Keys("res").Data).Result(); v != "A" {
		t.Errorf("fenced value = %q, want %q", v, "A")
	}
	// Negative control: without the fence B's write lands over A's.
	if err := unfenced.Set(ctx, "res", b.Token(), b.Owner(), "B", nil); err != nil {
		t.Fatalf("unfenced write of B = %v", err)
	}
	if v, _ := resource.Get(ctx, unfenced.Fence.Keys("res").Data).Result(); v != "B" {
		t.Errorf("unfenced control value = %q, want %q (the double grant's write landing)", v, "B")
	}

	// The operator re-bases the promoted server's counters above every
	// token the old primary handed out.
	if err := b.Release(ctx); err != nil {
		t.Fatalf("Release(B) = %v", err)
	}
	// Tokens are raw + TokenFloor: a floor above every token ever handed
	// out puts every later token above them, whatever the rewound counter
	// holds.
	floor := a.Token() + 1000
	rebased := newClient(t, replica, redislock.Options{Prefix: prefix, TokenFloor: floor})
	c := lock(t, rebased, name)
	if c.Token() <= floor {
		t.Errorf("token after re-basing with TokenFloor %d = %d, want > %d (raw + floor, above A's %d)", floor, c.Token(), floor, a.Token())
	}
	if err := fenced.Set(ctx, "res", c.Token(), c.Owner(), "C", nil); err != nil {
		t.Errorf("fenced write with the re-based token = %v, want accepted", err)
	}
	_ = c.Release(ctx)
	_ = a.Release(ctx)
}
