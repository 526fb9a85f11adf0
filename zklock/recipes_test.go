package zklock_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/zklock"
	"github.com/go-zookeeper/zk"
)

// foreign is a raw go-zookeeper session standing in for a Curator client:
// it creates entries exactly as Curator names them, in its own session.
func foreign(t *testing.T) *zk.Conn {
	t.Helper()
	conn, ev, err := zk.Connect([]string{testenv.ZK(t)}, 2*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatalf("zk.Connect = %v", err)
	}
	t.Cleanup(conn.Close)
	for timeout := time.After(10 * time.Second); ; {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return conn
			}
		case <-timeout:
			t.Fatal("raw session not established within 10s")
		}
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// curatorCreate creates "<dir>/_c_<uuid>-<marker><seq>" with data in the
// foreign session, as Curator's protected EPHEMERAL_SEQUENTIAL create does.
func curatorCreate(t *testing.T, conn *zk.Conn, dir, marker string, data []byte) string {
	t.Helper()
	p, err := conn.Create(dir+"/_c_"+zklock.NewUUID()+"-"+marker, data, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("Create(%s/…%s) = %v", dir, marker, err)
	}
	return p
}

func entryRE(marker string) *regexp.Regexp {
	return regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-` + regexp.QuoteMeta(marker) + `\d{10}$`)
}

func try(t *testing.T, f func(context.Context) (*baton.Lease, error)) (*baton.Lease, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return f(ctx)
}

// TestRWCuratorLayout: baton's read/write entries carry Curator's names,
// and a Curator writer queued in the same directory blocks a later baton
// reader (entries of both kinds interleave by sequence).
func TestRWCuratorLayout(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	name := lockName(t)
	dir, _ := c.Dir(name)
	rw, err := c.RWMutex(name)
	if err != nil {
		t.Fatalf("RWMutex(%q) = %v", name, err)
	}
	r, err := try(t, rw.RLock)
	if err != nil {
		t.Fatalf("RLock = %v", err)
	}
	if es := entries(t, c, name); len(es) != 1 || !entryRE("__READ__").MatchString(es[0]) {
		t.Fatalf("Entries(%q) = %q, want one _c_<uuid>-__READ__<10 digits>", name, es)
	}
	javaWriter := curatorCreate(t, foreign(t), dir, "__WRIT__", nil)

	other, _ := dial(t, "", zklock.Options{}).RWMutex(name)
	if l, err := try(t, other.TryRLock); !errors.Is(err, baton.ErrNotAcquired) {
		t.Fatalf("TryRLock behind a Curator writer = (%v, %v), want ErrNotAcquired", l != nil, err)
	}
	release(t, r)
	if l, err := try(t, other.TryRLock); !errors.Is(err, baton.ErrNotAcquired) {
		t.Fatalf("TryRLock while a Curator writer holds = (%v, %v), want ErrNotAcquired", l != nil, err)
	}
	w, err := try(t, other.TryLock)
	if !errors.Is(err, baton.ErrNotAcquired) {
		t.Fatalf("TryLock while a Curator writer holds = (%v, %v), want ErrNotAcquired", w != nil, err)
	}
	if err := c.Conn().Delete(javaWriter, -1); err != nil {
		t.Fatalf("Delete(%s) = %v", javaWriter, err)
	}
	w, err = try(t, other.TryLock)
	if err != nil {
		t.Fatalf("TryLock once the Curator writer left = %v", err)
	}
	if es := entries(t, c, name); len(es) != 1 || !entryRE("__WRIT__").MatchString(es[0]) {
		t.Fatalf("Entries(%q) = %q, want one _c_<uuid>-__WRIT__<10 digits>", name, es)
	}
	release(t, w)
}

// TestSemaphoreCuratorLayout: InterProcessSemaphoreV2's layout (guard
// under locks/, leases under leases/ with baton's N and the holder record
// as data); a Curator
// lease counts against N and, carrying no baton N, is not judged.
func TestSemaphoreCuratorLayout(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	name := lockName(t)
	s, err := c.Semaphore(name, 2)
	if err != nil {
		t.Fatalf("Semaphore(%q, 2) = %v", name, err)
	}
	l, err := try(t, s.Acquire)
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	es := entries(t, c, name+"/leases")
	if len(es) != 1 || !entryRE("lease-").MatchString(es[0]) {
		t.Fatalf("Entries(%q) = %q, want one _c_<uuid>-lease-<10 digits>", name+"/leases", es)
	}
	data, _, err := c.Conn().Get(l.Owner())
	want := "baton:permits=2\n" + engine.ProcessData(engine.ThisProcess("", nil))
	if err != nil || string(data) != want {
		t.Fatalf("Get(%s) = %q, %v; want %q (the N, then the holder record)", l.Owner(), data, err, want)
	}
	if es := entries(t, c, name+"/locks"); len(es) != 0 {
		t.Errorf("guard entries after Acquire = %q, want none (released)", es)
	}
	dir, _ := c.Dir(name)
	curatorCreate(t, foreign(t), dir+"/leases", "lease-", []byte("127.0.0.1"))

	other, _ := dial(t, "", zklock.Options{}).Semaphore(name, 2)
	var reports []queuekit.Disagreement
	other.OnDisagreement(func(d queuekit.Disagreement) { reports = append(reports, d) })
	if l2, err := try(t, other.TryAcquire); !errors.Is(err, baton.ErrNotAcquired) {
		t.Fatalf("TryAcquire with a baton and a Curator lease of 2 = (%v, %v), want ErrNotAcquired", l2 != nil, err)
	}
	if len(reports) != 0 {
		t.Errorf("disagreements = %+v, want none (N agrees; Curator's data is not judged)", reports)
	}
	release(t, l)
	l2, err := try(t, other.TryAcquire)
	if err != nil {
		t.Fatalf("TryAcquire after the baton lease was released = %v", err)
	}
	release(t, l2)
}

// TestElectionCuratorLayout: LeaderLatch's layout with the candidate ID as
// the znode's data; a Curator latch queued first leads, Leader reports its
// id, and baton leads once it leaves.
func TestElectionCuratorLayout(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	name := lockName(t)
	dir, _ := c.Dir(name)
	mkdirs(t, c.Conn(), dir)
	javaLatch := curatorCreate(t, foreign(t), dir, "latch-", []byte("java-1"))

	el, err := c.Election(name)
	if err != nil {
		t.Fatalf("Election(%q) = %v", name, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if cur, err := el.Leader(ctx); err != nil || cur.ID != "java-1" || cur.Entry != javaLatch {
		t.Fatalf("Leader() = (%+v, %v), want java-1 at %s", cur, err, javaLatch)
	}
	won := make(chan error, 1)
	var ld *baton.Leader
	go func() {
		var err error
		ld, err = el.CampaignAs(ctx, "go-1")
		won <- err
	}()
	eventually(t, 5*time.Second, "baton latch queued", func() bool { return len(entries(t, c, name)) == 2 })
	select {
	case err := <-won:
		t.Fatalf("CampaignAs behind a Curator latch returned %v, want it to wait", err)
	case <-time.After(300 * time.Millisecond):
	}
	for _, e := range entries(t, c, name) {
		if !entryRE("latch-").MatchString(e) {
			t.Errorf("entry %q, want _c_<uuid>-latch-<10 digits>", e)
		}
	}
	if err := c.Conn().Delete(javaLatch, -1); err != nil {
		t.Fatalf("Delete(%s) = %v", javaLatch, err)
	}
	if err := <-won; err != nil {
		t.Fatalf("CampaignAs after the Curator latch left = %v", err)
	}
	data, st, err := c.Conn().Get(ld.Lease().Owner())
	if err != nil || string(data) != "go-1" || st.EphemeralOwner != c.SessionID() {
		t.Fatalf("Get(%s) = %q, owner 0x%x, %v; want go-1 owned by 0x%x", ld.Lease().Owner(), data, st.EphemeralOwner, err, c.SessionID())
	}
	if err := ld.Resign(ctx, baton.ResignPlan{}); err != nil {
		t.Fatalf("Resign = %v", err)
	}
}

// mkdirs creates path and its parents as container nodes, as Curator's
// creatingParentContainersIfNeeded does.
func mkdirs(t *testing.T, conn *zk.Conn, path string) {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		if _, err := conn.CreateContainer(p, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("Create(%s) = %v", p, err)
		}
	}
}

// TestReservedNameCollision: an entry in "<name>/locks" — where a mutex
// named "<name>/locks" would queue — blocks semaphore name's acquirers,
// as the semaphore's guard queue is that directory. Such names are
// therefore refused by every recipe.
func TestReservedNameCollision(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	name := lockName(t)
	s, err := c.Semaphore(name, 2)
	if err != nil {
		t.Fatalf("Semaphore(%q, 2) = %v", name, err)
	}
	dir, _ := c.Dir(name)
	raw := foreign(t)
	for _, p := range []string{dir, dir + "/locks"} {
		for i := 1; i <= len(p); i++ {
			if i == len(p) || p[i] == '/' {
				if _, err := raw.CreateContainer(p[:i], nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					t.Fatalf("CreateContainer(%s) = %v", p[:i], err)
				}
			}
		}
	}
	squatter := curatorCreate(t, raw, dir+"/locks", "lock-", nil) // what Mutex(name+"/locks").Lock makes
	// The guard is a short critical section: even TryAcquire waits for it.
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	l, err := s.TryAcquire(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryAcquire with an entry in %s/locks = (%v, %v), want it blocked until its deadline", dir, l != nil, err)
	}
	if err := raw.Delete(squatter, -1); err != nil {
		t.Fatalf("Delete(%s) = %v", squatter, err)
	}
	l, err = try(t, s.TryAcquire)
	if err != nil {
		t.Fatalf("TryAcquire once the entry left = %v", err)
	}
	release(t, l)

	for _, sub := range []string{"/locks", "/leases"} {
		n := name + sub
		if _, err := c.Mutex(n); !errors.Is(err, baton.ErrInvalidName) || !strings.Contains(err.Error(), `"`+sub[1:]+`" is reserved`) {
			t.Errorf("Mutex(%q) = %v, want ErrInvalidName naming the reserved segment", n, err)
		}
		if _, err := c.RWMutex(n); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("RWMutex(%q) = %v, want ErrInvalidName", n, err)
		}
		if _, err := c.Semaphore(n, 1); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("Semaphore(%q, 1) = %v, want ErrInvalidName", n, err)
		}
		if _, err := c.Election(n); !errors.Is(err, baton.ErrInvalidName) {
			t.Errorf("Election(%q) = %v, want ErrInvalidName", n, err)
		}
	}
}

// TestDialRecordsThisProcess: a client dialled without a Process stores
// this process's holder record as its mutex entries' data, in the
// entry's create.
func TestDialRecordsThisProcess(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	name := lockName(t)
	l := lock(t, mutex(t, c, name))
	defer release(t, l)
	data, _, err := c.Conn().Get(l.Owner())
	if want := engine.ProcessData(engine.ThisProcess("", nil)); err != nil || string(data) != want {
		t.Errorf("Get(%s) = %q, %v; want the holder record %q", l.Owner(), data, err, want)
	}
}
