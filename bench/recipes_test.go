package bench_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/zklock"
	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// recipeRow is one recipe measured as acquire+release beside the bare
// round trips its protocol needs. Neither engine's usual Go client has a
// read/write lock or a semaphore, so there is no peer: the floor is the
// reference.
type recipeRow struct {
	what  string  // "rw read", "rw write", "semaphore"
	pairs []*pair // baton, floor, and optionally "min" (a cheaper protocol)
}

// recipeRig is one engine's recipe rows on one server and the request
// counter (as for rig).
type recipeRig struct {
	engine    string
	rows      []recipeRow
	requests  func() (int64, error)
	breakdown func() map[string]int64
}

// benchPermits is the semaphore's N in the uncontended rows: the acquirer
// is alone, so any N ≥ 1 makes the same requests.
const benchPermits = 3

// newZKRecipeRig measures zklock's RW lock and semaphore beside their
// floors on one go-zookeeper connection:
//
//   - RW read or write side: create EPHEMERAL_SEQUENTIAL "…__READ__" or
//     "…__WRIT__", getChildren, delete: the mutex floor with Curator's
//     markers (3 round trips).
//   - Semaphore (Curator's InterProcessSemaphoreV2): guard create in
//     "locks", getChildren(locks), lease create in "leases",
//     getChildren(leases), guard delete, then the lease delete on release
//     (6 round trips).
func newZKRecipeRig(tb testing.TB) *recipeRig {
	tb.Helper()
	addr := zkAddr(tb)
	conn, _, err := zk.Connect([]string{addr}, zkSessionTimeout, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		tb.Fatalf("zk.Connect(%q) = %v", addr, err)
	}
	tb.Cleanup(conn.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := zklock.Dial(ctx, []string{addr}, zklock.Options{SessionTimeout: zkSessionTimeout})
	if err != nil {
		tb.Fatalf("zklock.Dial(%q) = %v", addr, err)
	}
	tb.Cleanup(func() { c.Close() })
	acl := zk.WorldACL(zk.PermAll)
	mkdirs := func(ps ...string) {
		for _, p := range ps {
			if _, err := conn.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				tb.Fatalf("Create(%q) = %v", p, err)
			}
		}
		tb.Cleanup(func() {
			for _, p := range slices.Backward(ps) {
				_ = conn.Delete(p, -1)
			}
		})
	}
	count := func(dirs ...string) func(context.Context) (int, error) {
		return func(context.Context) (int, error) {
			n := 0
			for _, dir := range dirs {
				kids, _, err := conn.Children(dir)
				if errors.Is(err, zk.ErrNoNode) {
					continue
				}
				if err != nil {
					return 0, err
				}
				n += len(kids)
			}
			return n, nil
		}
	}
	if _, err := conn.Create("/baton-bench", nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		tb.Fatalf("Create(/baton-bench) = %v", err)
	}

	// Queue floors: create, read the queue, check the rule, delete.
	queueFloor := func(kind queuekit.Kind, what string, eligible func(own string, kids []string) bool) *pair {
		dir := "/" + benchName("zk-floor-"+strings.Trim(string(kind), "_-"))
		mkdirs(dir)
		p := &pair{impl: "floor", what: what, entries: count(dir)}
		var node string
		p.lock = func(context.Context) error {
			n, err := conn.Create(dir+"/"+string(kind), nil, zk.FlagEphemeralSequential, acl)
			if err != nil {
				return err
			}
			node = n
			kids, _, err := conn.Children(dir)
			if err != nil {
				return err
			}
			slices.SortFunc(kids, func(a, b string) int { return strings.Compare(zkSeq(a), zkSeq(b)) })
			if !eligible(n[len(dir)+1:], kids) {
				return fmt.Errorf("floor: %s not eligible in %v", n, kids)
			}
			return nil
		}
		p.unlock = func(context.Context) error { return conn.Delete(node, -1) }
		return p
	}
	noWriterBefore := func(own string, kids []string) bool {
		for _, k := range kids {
			if k == own {
				return true
			}
			if strings.Contains(k, string(queuekit.KindWrite)) {
				return false
			}
		}
		return false
	}
	isFirst := func(own string, kids []string) bool { return len(kids) > 0 && kids[0] == own }

	// The semaphore floor: Curator's V2 round trips, nothing else.
	semDir := "/" + benchName("zk-floor-sem")
	mkdirs(semDir, semDir+"/locks", semDir+"/leases")
	semFloor := &pair{impl: "floor", what: "V2: guard create+getChildren, lease create+getChildren, guard delete; lease delete",
		entries: count(semDir+"/locks", semDir+"/leases")}
	var lease string
	data := queuekit.PermitsData(benchPermits)
	semFloor.lock = func(context.Context) error {
		g, err := conn.Create(semDir+"/locks/lock-", nil, zk.FlagEphemeralSequential, acl)
		if err != nil {
			return err
		}
		kids, _, err := conn.Children(semDir + "/locks")
		if err != nil {
			return err
		}
		if len(kids) != 1 {
			return fmt.Errorf("floor: guard queue %v", kids)
		}
		l, err := conn.Create(semDir+"/leases/lease-", data, zk.FlagEphemeralSequential, acl)
		if err != nil {
			return err
		}
		leases, _, err := conn.Children(semDir + "/leases")
		if err != nil {
			return err
		}
		if len(leases) > benchPermits {
			return fmt.Errorf("floor: %d leases", len(leases))
		}
		lease = l
		return conn.Delete(g, -1)
	}
	semFloor.unlock = func(context.Context) error { return conn.Delete(lease, -1) }

	rwName := benchName("zk-baton-rw")
	rw, err := c.RWMutex(rwName)
	if err != nil {
		tb.Fatalf("RWMutex(%q) = %v", rwName, err)
	}
	zc, _ := baton.As[*zklock.Client](c) // the znode directories are ZooKeeper's own
	rwDir, _ := zc.Dir(rwName)
	semName := benchName("zk-baton-sem")
	sem, err := c.Semaphore(semName, benchPermits)
	if err != nil {
		tb.Fatalf("Semaphore(%q) = %v", semName, err)
	}
	semBatonDir, _ := zc.Dir(semName)
	return &recipeRig{
		engine: "zk",
		rows: []recipeRow{
			{"rw read", []*pair{
				batonPair(lockFunc(rw.RLock), "zklock RWMutex.RLock", count(rwDir)),
				queueFloor(queuekit.KindRead, "create __READ__ + getChildren + delete", noWriterBefore),
			}},
			{"rw write", []*pair{
				batonPair(rw, "zklock RWMutex.Lock", count(rwDir)),
				queueFloor(queuekit.KindWrite, "create __WRIT__ + getChildren + delete", isFirst),
			}},
			{"semaphore", []*pair{
				batonPair(lockFunc(sem.Acquire), "zklock Semaphore.Acquire", count(semBatonDir+"/locks", semBatonDir+"/leases")),
				semFloor,
			}},
		},
		requests: func() (int64, error) { return zkPackets(addr) },
	}
}

// newEtcdRecipeRig measures etcdlock's RW lock and semaphore beside their
// floors on one counted clientv3.Client and one floor lease:
//
//   - RW read or write side: one transaction that creates the entry if
//     absent and reads the queue, and a delete (the mutex floor, 2 round
//     trips).
//   - Semaphore, as baton runs it (Curator's V2 protocol on etcd): the
//     guard's transaction, the lease's transaction (create + read the
//     leases), the guard's delete, then the lease's delete (4 round trips).
//   - "min": a semaphore without a guard, the first N keys by create
//     revision: one transaction creating the key and reading the first N,
//     and a delete (2 round trips). It shows what sharing the V2 protocol with
//     ZooKeeper costs on etcd.
func newEtcdRecipeRig(tb testing.TB) *recipeRig {
	tb.Helper()
	rc := newRPCCounter()
	cli := etcdClient(tb, rc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	count := func(pfx string) func(context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			resp, err := cli.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return 0, err
			}
			return int(resp.Count), nil
		}
	}
	lease := floorLease(tb, ctx, cli)
	id := strconv.FormatInt(int64(lease), 16)

	// txnFloor creates key under pfx if absent and reads pfx (limit
	// entries, oldest first) in one transaction; ok judges the read.
	txnFloor := func(ctx context.Context, pfx, val string, limit int64, ok func([]string) bool) (string, error) {
		key := pfx + id
		resp, err := cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, val, clientv3.WithLease(lease)),
				clientv3.OpGet(pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(limit), clientv3.WithKeysOnly())).
			Commit()
		if err != nil {
			return "", err
		}
		var keys []string
		for _, kv := range resp.Responses[1].GetResponseRange().GetKvs() {
			keys = append(keys, string(kv.Key))
		}
		if !resp.Succeeded || !ok(keys) {
			return "", fmt.Errorf("floor: %s not eligible in %v", key, keys)
		}
		return key, nil
	}
	del := func(ctx context.Context, key string) error {
		_, err := cli.Delete(ctx, key)
		return err
	}
	queueFloor := func(kind, what string) *pair {
		pfx := benchName("etcd-floor-"+kind) + "/"
		var key string
		return &pair{impl: "floor", what: what, entries: count(pfx),
			lock: func(ctx context.Context) (err error) {
				key, err = txnFloor(ctx, pfx, kind, 1, func(k []string) bool { return len(k) == 1 && k[0] == pfx+id })
				return err
			},
			unlock: func(ctx context.Context) error { return del(ctx, key) },
		}
	}

	semPfx := benchName("etcd-floor-sem") + "/"
	var semLease string
	permits := "lease-" + string(queuekit.PermitsData(benchPermits))
	semFloor := &pair{impl: "floor", what: "V2: guard txn, lease txn, guard delete; lease delete", entries: count(semPfx),
		lock: func(ctx context.Context) error {
			g, err := txnFloor(ctx, semPfx+"locks/", "lock-", 1, func(k []string) bool { return len(k) == 1 })
			if err != nil {
				return err
			}
			l, err := txnFloor(ctx, semPfx+"leases/", permits, benchPermits+1, func(k []string) bool { return len(k) <= benchPermits })
			if err != nil {
				return err
			}
			semLease = l
			return del(ctx, g)
		},
		unlock: func(ctx context.Context) error { return del(ctx, semLease) },
	}
	minPfx := benchName("etcd-min-sem") + "/"
	var minKey string
	semMin := &pair{impl: "min", what: "first N by create revision: txn(put, get first N); delete", entries: count(minPfx),
		lock: func(ctx context.Context) (err error) {
			minKey, err = txnFloor(ctx, minPfx, permits, benchPermits, func(k []string) bool { return slices.Contains(k, minPfx+id) })
			return err
		},
		unlock: func(ctx context.Context) error { return del(ctx, minKey) },
	}

	c, err := etcdlock.New(cli, etcdlock.Options{TTL: etcdTTL})
	if err != nil {
		tb.Fatalf("etcdlock.New = %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	rwName := benchName("etcd-baton-rw")
	rw, err := c.RWMutex(rwName)
	if err != nil {
		tb.Fatalf("RWMutex(%q) = %v", rwName, err)
	}
	semName := benchName("etcd-baton-sem")
	sem, err := c.Semaphore(semName, benchPermits)
	if err != nil {
		tb.Fatalf("Semaphore(%q) = %v", semName, err)
	}
	return &recipeRig{
		engine: "etcd",
		rows: []recipeRow{
			{"rw read", []*pair{batonPair(lockFunc(rw.RLock), "etcdlock RWMutex.RLock", count(rwName+"/")), queueFloor("read", "txn(put if absent, get queue) + delete")}},
			{"rw write", []*pair{batonPair(rw, "etcdlock RWMutex.Lock", count(rwName+"/")), queueFloor("write", "txn(put if absent, get queue) + delete")}},
			{"semaphore", []*pair{batonPair(lockFunc(sem.Acquire), "etcdlock Semaphore.Acquire", count(semName+"/")), semFloor, semMin}},
		},
		requests:  func() (int64, error) { return rc.requests(), nil },
		breakdown: rc.snapshot,
	}
}

// floorLease grants a lease for the floors and keeps it alive until the
// end of tb.
func floorLease(tb testing.TB, ctx context.Context, cli *clientv3.Client) clientv3.LeaseID {
	tb.Helper()
	lease, err := cli.Grant(ctx, int64(etcdTTL/time.Second))
	if err != nil {
		tb.Fatalf("Grant = %v", err)
	}
	kctx, kcancel := context.WithCancel(context.Background())
	ka, err := cli.KeepAlive(kctx, lease.ID)
	if err != nil {
		kcancel()
		tb.Fatalf("KeepAlive = %v", err)
	}
	done := make(chan struct{})
	go func() { // owner: tb; ends when kctx is cancelled at cleanup
		defer close(done)
		for range ka {
		}
	}()
	tb.Cleanup(func() {
		kcancel()
		<-done
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		_, _ = cli.Revoke(rctx, lease.ID)
	})
	return lease.ID
}

var recipeRigMakers = []struct {
	engine string
	make   func(testing.TB) *recipeRig
}{{"zk", newZKRecipeRig}, {"etcd", newEtcdRecipeRig}}

// TestSmokeRecipes checks that every measured recipe operation and floor
// really acquires and releases (one entry while held, none after).
func TestSmokeRecipes(t *testing.T) {
	for _, mk := range recipeRigMakers {
		t.Run(mk.engine, func(t *testing.T) {
			r := mk.make(t)
			for _, row := range r.rows {
				t.Run(strings.ReplaceAll(row.what, " ", "-"), func(t *testing.T) {
					smokeRig(t, &rig{engine: r.engine, pairs: row.pairs})
				})
			}
		})
	}
}

// recipeReport measures every row like uncontendedReport: interleaved
// rounds, median of per-round ratios, requests per operation.
func recipeReport(t *testing.T, rounds int) (misses []string) {
	var tw strings.Builder
	w := tabwriter.NewWriter(&tw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "engine\trecipe\tbaton µs/op\tfloor µs/op\tbaton/floor\treq/op baton·floor\tallocs/op baton·floor\ttarget\tresult\t")
	var notes []string
	for _, mk := range recipeRigMakers {
		r := mk.make(t)
		for _, row := range r.rows {
			res := make(map[string]*uncontended)
			for _, p := range row.pairs {
				res[p.impl] = &uncontended{}
			}
			for round := range rounds {
				for k := range row.pairs {
					p := row.pairs[(k+round)%len(row.pairs)]
					var err error
					br := testing.Benchmark(func(b *testing.B) { err = loop(b, p) })
					if err != nil || br.N == 0 {
						t.Fatalf("%s %s %s: acquire+release = %v (N=%d)", r.engine, row.what, p.what, err, br.N)
					}
					res[p.impl].add(br)
				}
			}
			rg := &rig{engine: r.engine, requests: r.requests, breakdown: r.breakdown}
			for _, p := range row.pairs {
				per, bd, err := requestsPerOp(rg, p, 200)
				if err != nil {
					t.Fatalf("%s %s %s: counting requests: %v", r.engine, row.what, p.what, err)
				}
				res[p.impl].reqOp, res[p.impl].breakMs = per, bd
			}
			b, f := res["baton"], res["floor"]
			bf := ratio(b, f)
			// Recipes have no peer to compare with: hold them to the
			// mutex's target (≤1.05× the floor) and to the floor's
			// request count.
			verdict := "PASS"
			if bf > 1.05 || b.reqOp > f.reqOp+0.05 {
				verdict = "MISS"
				misses = append(misses, fmt.Sprintf("%s %s (%.3f× floor, %.2f vs %.2f req/op)", r.engine, row.what, bf, b.reqOp, f.reqOp))
			}
			fmt.Fprintf(w, "%s\t%s\t%.0f\t%.0f\t%.3f\t%.2f·%.2f\t%s\t≤1.05×floor, req ≤ floor\t%s\t\n", r.engine, row.what,
				b.median()/1e3, f.median()/1e3, bf, b.reqOp, f.reqOp, allocsOf(res, "baton", "floor"), verdict)
			for _, p := range row.pairs {
				u := res[p.impl]
				note := fmt.Sprintf("%s %s %s = %s: rounds %s µs/op, %.2f req/op, %s", r.engine, row.what, p.impl, p.what, u.spread(), u.reqOp, u.allocSpread())
				if p.impl == "min" {
					note += fmt.Sprintf("; baton/min %.3f", ratio(b, u))
				}
				if u.breakMs != nil {
					note += fmt.Sprintf(", requests by method over 200 ops %v", u.breakMs)
				}
				notes = append(notes, note)
			}
		}
	}
	w.Flush()
	report(t, "recipes", "uncontended recipe acquire+release, %d interleaved rounds (ratios: median of per-round ratios; allocs/op: the process's heap allocations per op over the timed loop, median over rounds):\n%s\n%s", rounds, tw.String(), strings.Join(notes, "\n"))
	return misses
}

// lockFunc makes an acquire method a locker: a read lock's RLock, a
// semaphore's Acquire.
type lockFunc func(ctx context.Context) (*baton.Lease, error)

func (f lockFunc) Lock(ctx context.Context) (*baton.Lease, error) { return f(ctx) }
