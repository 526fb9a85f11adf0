package redlock_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/redlock"
	"github.com/baton-go/baton/redlock/redlocktest"
)

// redlockOf returns c's *redlock.Client, reached through baton.As, for what
// only Redlock has (Verify, Stats).
func redlockOf(t *testing.T, c *baton.Client) *redlock.Client {
	t.Helper()
	rc, ok := baton.As[*redlock.Client](c)
	if !ok {
		t.Fatalf("As[*redlock.Client](%s client) failed", c.Engine())
	}
	return rc
}

// recordGrant records an acquire's ok (or nothing) in rec.
func recordGrant(rec *drill.Recorder, client, name string, l *baton.Lease) {
	op := rec.Begin(client, drill.OpAcquire, name, 0)
	op.End(drill.Ok, func(e *drill.Event) { e.Token, e.Entry = l.Token(), l.Owner() })
}

// recordRelease records the release of l by client.
func recordRelease(rec *drill.Recorder, client string, l *baton.Lease) {
	rec.Begin(client, drill.OpRelease, l.Name(), l.Token()).Ok()
}

// TestRow07EarlyExpiry is fault row 7: one granting node expires A's key
// early (PEXPIRE key 1, as a clock jump on that node would). B then wins
// a majority while A still holds: the raw grant checker sees the double
// grant — Redlock cannot prevent it — but B's quorum token is larger than
// A's, so a fenced resource rejects A from B's first write on.
func TestRow07EarlyExpiry(t *testing.T) {
	addrs := testenv.Redlock(t)
	prefix := redlocktest.Prefix(t, addrs)
	name := "row07/early"
	// A reaches nodes 0–2 only, B nodes 2–4 only: they share node 2.
	a := redlocktest.NewProxied(t, addrs, prefix, redlock.Options{TTL: 6 * time.Second})
	b := redlocktest.NewProxied(t, addrs, prefix, redlock.Options{TTL: 6 * time.Second})
	for _, c := range []*redlocktest.Proxied{a, b} {
		if err := redlockOf(t, c.Client).Verify(redlocktest.OpCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("Verify() = %v", err)
		}
	}
	a.Blackhole(t, 3, 4)
	b.Blackhole(t, 0, 1)
	rec := drill.NewRecorder(nil)

	la := redlocktest.Lock(t, a.Client, name)
	recordGrant(rec, "A", name, la)
	if _, err := redlocktest.Mutex(t, b.Client, name).TryLock(redlocktest.OpCtx(t, 5*time.Second)); err == nil {
		t.Fatalf("B's TryLock while A holds node 2 succeeded before any fault")
	}
	// The fault: node 2 expires A's key now.
	rdb := redis.NewClient(&redis.Options{Addr: addrs[2]})
	defer rdb.Close()
	if err := rdb.PExpire(t.Context(), prefix+"lock:"+name, time.Millisecond).Err(); err != nil {
		t.Fatalf("PEXPIRE on node 2 = %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	lb, err := redlocktest.Mutex(t, b.Client, name).TryLock(redlocktest.OpCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("B's TryLock after node 2 expired A's key early = %v, want a lease (the double grant Redlock allows)", err)
	}
	recordGrant(rec, "B", name, lb)
	if st := la.State(); st != baton.Held {
		t.Logf("A's state when B was granted: %v", st)
	}
	vs := drill.CheckExclusive(rec.Events())
	if len(vs) == 0 {
		t.Errorf("grant checker found no double grant, want one: A (token %d) still held when B (token %d) was granted", la.Token(), lb.Token())
	}
	for _, v := range vs {
		t.Logf("expected violation: %v", v)
	}
	if lb.Token() <= la.Token() {
		t.Errorf("B's token %d ≤ A's %d: the fence could not tell the later grant", lb.Token(), la.Token())
	}
	redlocktest.Release(t, lb)
	if err := la.Release(redlocktest.OpCtx(t, 5*time.Second)); err != nil {
		t.Logf("A's release after its node 2 key was taken: %v", err)
	}
}

// volatileRedis is a redis-server of the test's own that persists nothing
// (--appendonly no --save ""): a kill -9 and restart leaves it empty, as a
// Redlock node restarted without persistence (or from a stale snapshot)
// comes back.
type volatileRedis struct {
	bin, dir, addr string
	port           int
	cmd            *exec.Cmd
}

// startVolatileRedis starts a volatileRedis on a free loopback port; it is
// killed at the end of the test.
func startVolatileRedis(t *testing.T) *volatileRedis {
	t.Helper()
	bin := testenv.Binary(t, "redis-server")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	r := &volatileRedis{bin: bin, dir: t.TempDir(), port: port, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	t.Cleanup(func() {
		if r.cmd != nil {
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
		}
	})
	r.start(t)
	return r
}

// start runs the server on its port and waits until it answers PING.
func (r *volatileRedis) start(t *testing.T) {
	t.Helper()
	log := filepath.Join(r.dir, "redis.log")
	r.cmd = exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--logfile", log)
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log)
			t.Fatalf("redis-server on %s not answering within 10s: %v\n%s", r.addr, err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restartEmpty kills the server with SIGKILL and starts it again on the
// same port: without persistence it comes back with no keys at all.
func (r *volatileRedis) restartEmpty(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatalf("kill -9 redis-server %s: %v", r.addr, err)
	}
	_ = r.cmd.Wait()
	r.cmd = nil
	r.start(t)
}

// TestRow07WipedNode is row 7's last part: a node restarted without
// persistence breaks the package's assumptions, with the violation its
// doc ("Node indexes", "Assumptions") states. A holds the lock on nodes
// {0, 1} of three (node 2 is cut off from it), after two earlier grants
// that raised nodes 0 and 1. Node 0 — A's token's minter, and one of the
// two votes A's grant rests on — is killed with SIGKILL and restarted
// empty. Then:
//   - C, a client that had verified node 0 before, finds it without an
//     index and refuses it (ErrNodeWiped, Stats.WipedNodes, no more
//     requests to it);
//   - B, a client that never saw node 0, cannot tell it from a new node:
//     it sets the index again and wins a majority {0, 2} while A still
//     holds — the raw grant checker reports the double grant — with a
//     token minted from node 0's rewound counter, below A's and below
//     tokens already issued: I2 breaks and the fence cannot help.
//
// The control is the same deployment before the wipe: C's TryLock fails
// with ErrNotAcquired.
func TestRow07WipedNode(t *testing.T) {
	srv := []*volatileRedis{startVolatileRedis(t), startVolatileRedis(t), startVolatileRedis(t)}
	addrs := []string{srv[0].addr, srv[1].addr, srv[2].addr}
	const prefix = "row07:wiped:"
	name := "row07/wiped"
	o := redlock.Options{TTL: 10 * time.Second}
	a := redlocktest.NewProxied(t, addrs, prefix, o)
	c := redlocktest.NewClient(t, addrs, prefix, o)
	for who, cl := range map[string]*baton.Client{"A": a.Client, "C": c} {
		if err := redlockOf(t, cl).Verify(redlocktest.OpCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("%s: Verify() = %v", who, err)
		}
	}
	a.Blackhole(t, 2)
	rec := drill.NewRecorder(nil)
	for range 2 {
		l := redlocktest.Lock(t, a.Client, name)
		recordGrant(rec, "A", name, l)
		recordRelease(rec, "A", l)
		redlocktest.Release(t, l)
	}
	la := redlocktest.Lock(t, a.Client, name)
	recordGrant(rec, "A", name, la)
	t.Logf("A holds %q with token %d (its third grant)", name, la.Token())

	// Control: before the wipe nobody else gets a majority.
	if _, err := redlocktest.Mutex(t, c, name).TryLock(redlocktest.OpCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNotAcquired) {
		t.Fatalf("C's TryLock while A holds, before any fault = %v, want ErrNotAcquired", err)
	}

	raw := redis.NewClient(&redis.Options{Addr: addrs[0], MaxRetries: -1})
	defer raw.Close()
	ctrBefore, err := raw.Get(t.Context(), prefix+"counter").Uint64()
	if err != nil || ctrBefore < la.Token() {
		t.Fatalf("node 0's counter before the wipe = %d, %v; want ≥ A's token %d (node 0 mints the largest token of each of A's rounds)", ctrBefore, err, la.Token())
	}
	srv[0].restartEmpty(t)
	if n, err := raw.Exists(t.Context(), prefix+"index", prefix+"counter", prefix+"lock:"+name).Result(); err != nil || n != 0 {
		t.Fatalf("node 0 after the restart: %d of index, counter, lock key exist (%v), want none", n, err)
	}

	// C knew node 0: it refuses the wiped node rather than trust its
	// rewound counter. Its first request to node 0 may meet the killed
	// server's dead connection; the next reaches the new server.
	var cerr error
	for range 3 {
		_, cerr = redlocktest.Mutex(t, c, name).TryLock(redlocktest.OpCtx(t, 5*time.Second))
		if errors.Is(cerr, redlock.ErrNodeWiped) {
			break
		}
		t.Logf("C's TryLock after the wipe = %v; retrying", cerr)
	}
	if !errors.Is(cerr, redlock.ErrNodeWiped) || !errors.Is(cerr, baton.ErrUnavailable) {
		t.Fatalf("C's TryLock after node 0 was wiped = %v, want ErrUnavailable wrapping ErrNodeWiped", cerr)
	}
	if st := redlockOf(t, c).Stats(); st.WipedNodes != 1 {
		t.Errorf("C's Stats().WipedNodes = %d, want 1", st.WipedNodes)
	}

	// B never saw node 0: to B it is a new node.
	b := redlocktest.NewClient(t, addrs, prefix, o)
	lb, err := redlocktest.Mutex(t, b, name).Lock(redlocktest.OpCtx(t, 8*time.Second))
	if err != nil {
		t.Fatalf("B's Lock after node 0 came back empty = %v, want a lease (the violation of the persistence assumption)", err)
	}
	recordGrant(rec, "B", name, lb)
	if st := la.State(); st != baton.Held {
		t.Errorf("A's state when B was granted = %v, want Held: A is not told anything", st)
	}
	if idx, err := raw.Get(t.Context(), prefix+"index").Result(); err != nil || idx != "0" {
		t.Errorf("node 0's index after B's grant = %q, %v; want \"0\" set again by B", idx, err)
	}
	// What node 0 minted for B, not its counter now: B's write-back may
	// have raised that since, to B's quorum token.
	minted, _ := raw.HGet(t.Context(), prefix+"lock:"+name, "token").Uint64()
	t.Logf("node 0's counter before the wipe %d; node 0 minted %d for B; tokens: A %d, B %d", ctrBefore, minted, la.Token(), lb.Token())
	if minted == 0 || minted >= ctrBefore {
		t.Errorf("node 0 minted %d for B, want a token below %d (its counter rewound by the wipe)", minted, ctrBefore)
	}

	ex := drill.CheckExclusive(rec.Events())
	if len(ex) == 0 {
		t.Errorf("grant checker found no double grant, want one: A (token %d) still holds while B (token %d) was granted", la.Token(), lb.Token())
	}
	if lb.Token() >= la.Token() {
		t.Errorf("B's token %d ≥ A's %d: want it below, minted from node 0's rewound counter", lb.Token(), la.Token())
	}
	tk := drill.CheckTokens(rec.Events())
	if len(tk) == 0 {
		t.Errorf("token checker found no I2 violation, want B's token %d after A's %d", lb.Token(), la.Token())
	}
	for _, v := range append(ex, tk...) {
		t.Logf("expected violation: %v", v)
	}

	// C refuses node 0 from now on: an attempt asks only nodes 1 and 2
	// (and, counting node 0 as failed, reports the lock unavailable
	// rather than merely taken).
	before := redlockOf(t, c).Stats().NodeRequests
	if l, err := redlocktest.Mutex(t, c, name).TryLock(redlocktest.OpCtx(t, 5*time.Second)); err == nil {
		t.Errorf("C's TryLock while A and B hold granted token %d, want an error", l.Token())
	} else {
		t.Logf("C's TryLock while A and B hold: %v", err)
	}
	if d := redlockOf(t, c).Stats().NodeRequests - before; d != 2 {
		t.Errorf("C's attempt sent %d acquire requests, want 2 (node 0 refused)", d)
	}
	redlocktest.Release(t, lb)
	if err := la.Release(redlocktest.OpCtx(t, 5*time.Second)); err != nil {
		t.Logf("A's release after node 0 was wiped: %v", err)
	}
}
