package zklock_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/baton-go/baton/engine/queuekit/drillhook"
	"github.com/baton-go/baton/internal/recorder"
	"github.com/baton-go/baton/zklock"
	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The examples need the server; the tests skip (or fail under CI) by
	// themselves without it, but an example cannot skip: leave them out.
	flag.Parse()
	if os.Getenv("BATON_TEST_ZK") == "" && !testenv.CI() && flag.Lookup("test.run").Value.String() == "" {
		fmt.Fprintln(os.Stderr, "zklock: BATON_TEST_ZK not set: examples not run")
		_ = flag.Set("test.run", "^Test")
	}
	goleak.VerifyTestMain(m)
}

// dial connects a client to the test server (or addr) and closes it at the
// end of the test.
func dial(t *testing.T, addr string, opts zklock.Options) *zklock.Client {
	t.Helper()
	if addr == "" {
		addr = testenv.ZK(t)
	}
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := zklock.DialClient(ctx, []string{addr}, opts)
	if err != nil {
		t.Fatalf("Dial(%s) = %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// lockName returns a name no other test run uses.
func lockName(t *testing.T) string {
	return "baton-test/" + strings.ReplaceAll(t.Name(), "/", "-") + "/" + zklock.NewUUID()[:8]
}

func mutex(t *testing.T, c *zklock.Client, name string) *queuekit.Mutex {
	t.Helper()
	m, err := c.Mutex(name)
	if err != nil {
		t.Fatalf("Mutex(%q) = %v", name, err)
	}
	return m
}

func lock(t *testing.T, m *queuekit.Mutex) *baton.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock(%q) = %v", m.Name(), err)
	}
	return l
}

func release(t *testing.T, l *baton.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release(%q) = %v", l.Name(), err)
	}
}

func entries(t *testing.T, c *zklock.Client, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	es, err := c.Entries(ctx, name)
	if err != nil {
		t.Fatalf("Entries(%q) = %v", name, err)
	}
	return es
}

// eventually polls cond for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLockUnlock(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	name := lockName(t)
	m := mutex(t, c, name)
	l := lock(t, m)
	if l.State() != baton.Held || l.Token() == 0 || l.Engine() != "zk" {
		t.Fatalf("Lock(%q) = state %v token %d engine %q, want held, token > 0, zk", name, l.State(), l.Token(), l.Engine())
	}
	if es := entries(t, c, name); len(es) != 1 || !strings.HasSuffix(l.Owner(), "/"+es[0]) {
		t.Fatalf("Entries(%q) = %v, want exactly the lease's entry %s", name, es, l.Owner())
	}
	// Reentry through the lease's context does not queue again.
	ctx, cancel := context.WithTimeout(l.Context(), 5*time.Second)
	defer cancel()
	l2, err := m.Lock(ctx)
	if err != nil || l2 != l || l.Holds() != 2 {
		t.Fatalf("reentrant Lock(%q) = %v, %v (holds %d), want the same lease with 2 holds", name, l2, err, l.Holds())
	}
	release(t, l)
	if es := entries(t, c, name); len(es) != 1 {
		t.Fatalf("Entries(%q) after inner release = %v, want the entry kept", name, es)
	}
	release(t, l)
	if es := entries(t, c, name); len(es) != 0 {
		t.Fatalf("Entries(%q) after release = %v, want none", name, es)
	}
	if err := context.Cause(l.Context()); !errors.Is(err, baton.ErrReleased) {
		t.Fatalf("lease cause = %v, want %v", err, baton.ErrReleased)
	}
}

func TestExclusionAndHandoff(t *testing.T) {
	a, b := dial(t, "", zklock.Options{}), dial(t, "", zklock.Options{})
	name := lockName(t)
	ma, mb := mutex(t, a, name), mutex(t, b, name)
	la := lock(t, ma)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if l, err := mb.TryLock(ctx); !errors.Is(err, baton.ErrNotAcquired) {
		t.Fatalf("TryLock(%q) while held = %v, %v, want %v", name, l, err, baton.ErrNotAcquired)
	}
	if es := entries(t, a, name); len(es) != 1 {
		t.Fatalf("Entries(%q) after failed TryLock = %v, want only the holder's", name, es)
	}

	type result struct {
		l   *baton.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := mb.Lock(ctx)
		got <- result{l, err}
	}()
	select {
	case r := <-got:
		t.Fatalf("Lock(%q) by b while a holds = %v, %v, want it to wait", name, r.l, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	release(t, la)
	r := <-got
	if r.err != nil {
		t.Fatalf("Lock(%q) by b after release = %v", name, r.err)
	}
	if r.l.Token() <= la.Token() {
		t.Fatalf("handoff token = %d, want > %d", r.l.Token(), la.Token())
	}
	release(t, r.l)
}

func TestTokensIncrease(t *testing.T) {
	a, b := dial(t, "", zklock.Options{}), dial(t, "", zklock.Options{})
	name := lockName(t)
	ms := []*queuekit.Mutex{mutex(t, a, name), mutex(t, b, name)}
	var last uint64
	for i := range 6 {
		l := lock(t, ms[i%2])
		if l.Token() <= last {
			t.Fatalf("grant %d token = %d, want > %d", i, l.Token(), last)
		}
		last = l.Token()
		release(t, l)
	}

	// The container directory goes (as the server's reaper would delete
	// it) and comes back: tokens still grow, sequence suffixes restart.
	dir, err := a.Dir(name)
	if err != nil {
		t.Fatalf("Dir(%q) = %v", name, err)
	}
	if err := a.Conn().Delete(dir, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("Delete(%s) = %v", dir, err)
	}
	l := lock(t, ms[0])
	if l.Token() <= last {
		t.Fatalf("token after re-creating the directory = %d, want > %d", l.Token(), last)
	}
	if es := entries(t, a, name); len(es) != 1 || !strings.HasSuffix(es[0], "-lock-0000000000") {
		t.Fatalf("Entries(%q) in the new directory = %v, want one entry with sequence 0", name, es)
	}
	release(t, l)

	floor := uint64(1) << 50
	f := dial(t, "", zklock.Options{TokenFloor: floor})
	lf := lock(t, mutex(t, f, name))
	if lf.Token() <= floor+last {
		t.Fatalf("token with floor %d = %d, want > %d", floor, lf.Token(), floor+last)
	}
	release(t, lf)
}

var entryName = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-\d{10}$`)

func TestCuratorLayout(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	name := lockName(t)
	l := lock(t, mutex(t, c, name))
	defer release(t, l)
	dir, _ := c.Dir(name)
	if want := "/" + name; dir != want {
		t.Fatalf("Dir(%q) = %q, want %q", name, dir, want)
	}
	es := entries(t, c, name)
	if len(es) != 1 || !entryName.MatchString(es[0]) {
		t.Fatalf("Entries(%q) = %v, want one _c_<uuid>-lock-<10 digits>", name, es)
	}
	if l.Owner() != dir+"/"+es[0] {
		t.Fatalf("lease owner = %q, want %q", l.Owner(), dir+"/"+es[0])
	}
	ok, st, err := c.Conn().Exists(l.Owner())
	if err != nil || !ok || st.EphemeralOwner != c.SessionID() {
		t.Fatalf("Exists(%s) = %v, %+v, %v; want ephemeral of session 0x%x", l.Owner(), ok, st, err, c.SessionID())
	}
	// That the directories are container nodes cannot be seen from a
	// client (ZooKeeper reports ephemeralOwner 0 for containers) and the
	// reaper runs every 60 s by default, so it is not asserted here.
}

func TestChrootIsolation(t *testing.T) {
	root := "/baton-test-chroot-" + zklock.NewUUID()[:8]
	servers, chroot, err := zklock.ParseURL("zk://" + testenv.ZK(t) + root + "/one")
	if err != nil {
		t.Fatalf("ParseURL = %v", err)
	}
	one := dial(t, servers[0], zklock.Options{Chroot: chroot})
	two := dial(t, servers[0], zklock.Options{Chroot: root + "/two"})
	name := "shared/name"
	l1 := lock(t, mutex(t, one, name))
	defer release(t, l1)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	l2, err := mutex(t, two, name).TryLock(ctx) // another chroot: another lock
	if err != nil {
		t.Fatalf("TryLock(%q) in another chroot = %v, want granted", name, err)
	}
	defer release(t, l2)
	for _, tc := range []struct {
		l    *baton.Lease
		want string
	}{{l1, root + "/one/shared/name/"}, {l2, root + "/two/shared/name/"}} {
		if !strings.HasPrefix(tc.l.Owner(), tc.want) {
			t.Errorf("entry %q, want under %q", tc.l.Owner(), tc.want)
		}
	}
	if _, err := one.Mutex("../escape"); !errors.Is(err, baton.ErrInvalidName) {
		t.Errorf(`Mutex("../escape") = %v, want %v`, err, baton.ErrInvalidName)
	}
}

func TestRecoverCreateDuplicates(t *testing.T) {
	rec := recorder.New()
	a, b := dial(t, "", zklock.Options{Observer: rec}), dial(t, "", zklock.Options{})
	name := lockName(t)
	hold := lock(t, mutex(t, b, name)) // keeps the directory alive
	defer release(t, hold)
	dir, _ := a.Dir(name)
	uuid := zklock.NewUUID()
	prefix := dir + "/_c_" + uuid + "-lock-"
	create := func(c *zklock.Client) string {
		t.Helper()
		p, err := c.Conn().Create(prefix, nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatalf("Create(%s) = %v", prefix, err)
		}
		return p
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()

	other := create(b) // same prefix, another session, smallest sequence
	if e, found, err := a.RecoverCreate(ctx, name, uuid); err != nil || found {
		t.Fatalf("RecoverCreate with only another session's node = %+v, %v, %v; want not found", e, found, err)
	}
	if got := rec.Events(); len(got) != 0 {
		t.Fatalf("recovery that adopted nothing reported %v", recorder.Kinds(got))
	}
	first, second := create(a), create(a)
	e, found, err := a.RecoverCreate(ctx, name, uuid)
	if err != nil || !found || e.Key != first {
		t.Fatalf("RecoverCreate = %+v, %v, %v; want %s adopted", e, found, err, first)
	}
	got := rec.Events()
	want := baton.Event{Kind: baton.EventRecovered, Engine: "zk", Name: name, Owner: first,
		Session: "0x" + strconv.FormatInt(a.SessionID(), 16), Count: 1}
	if len(got) != 1 {
		t.Fatalf("events = %v, want one %v", recorder.Kinds(got), baton.EventRecovered)
	}
	g := got[0]
	if g.Time.IsZero() {
		t.Errorf("%v has no Time", g.Kind)
	}
	g.Time = time.Time{}
	if g != want {
		t.Errorf("event = %+v, want %+v", g, want)
	}
	for _, tc := range []struct {
		path string
		want bool
	}{{other, true}, {first, true}, {second, false}} {
		ok, _, err := a.Conn().Exists(tc.path)
		if err != nil || ok != tc.want {
			t.Errorf("Exists(%s) = %v, %v; want %v", tc.path, ok, err, tc.want)
		}
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	a, b := dial(t, "", zklock.Options{}), dial(t, "", zklock.Options{})
	name := lockName(t)
	la := lock(t, mutex(t, a, name))
	defer release(t, la)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	l, err := mutex(t, b, name).Lock(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock(%q) with a deadline = %v, %v; want %v", name, l, err, context.DeadlineExceeded)
	}
	if late := time.Since(start) - 300*time.Millisecond; late > 250*time.Millisecond {
		t.Fatalf("Lock(%q) returned %v after its deadline, want ≤ 250ms", name, late)
	}
	// The waiter's entry is removed by its session's cleanup.
	eventually(t, 3*time.Second, "abandoned entry removed", func() bool { return len(entries(t, a, name)) == 1 })
}

// TestPredecessorGoneBeforeWatch is CURATOR-527: the blocker is deleted
// between the queue read and the watch; the waiter must notice at once.
func TestPredecessorGoneBeforeWatch(t *testing.T) {
	a := dial(t, "", zklock.Options{})
	name := lockName(t)
	la := lock(t, mutex(t, a, name))
	hooks := &drillhook.Hooks{BeforeWatch: func(blocker string) {
		if err := a.Conn().Delete(blocker, -1); err != nil {
			t.Errorf("Delete(%s) = %v", blocker, err)
		}
	}}
	b := dial(t, "", zklock.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	ctx = drillhook.With(ctx, hooks)
	lb, err := mutex(t, b, name).Lock(ctx)
	if err != nil {
		t.Fatalf("Lock(%q) after the blocker vanished before the watch = %v", name, err)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("token = %d, want > %d", lb.Token(), la.Token())
	}
	release(t, lb)
}

func TestClosedClient(t *testing.T) {
	c := dial(t, "", zklock.Options{})
	name := lockName(t)
	m := mutex(t, c, name)
	l := lock(t, m)
	if err := c.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	select {
	case <-l.Done():
	case <-time.After(2 * time.Second):
		t.Fatalf("lease still %v after Close", l.State())
	}
	if err := context.Cause(l.Context()); !errors.Is(err, baton.ErrLost) {
		t.Fatalf("lease cause after Close = %v, want %v", err, baton.ErrLost)
	}
	ctx := t.Context()
	if _, err := m.Lock(ctx); !errors.Is(err, baton.ErrClosed) {
		t.Errorf("Lock after Close = %v, want %v", err, baton.ErrClosed)
	}
	if _, err := c.Mutex(name); !errors.Is(err, baton.ErrClosed) {
		t.Errorf("Mutex after Close = %v, want %v", err, baton.ErrClosed)
	}
	if _, err := c.Entries(ctx, name); !errors.Is(err, baton.ErrClosed) {
		t.Errorf("Entries after Close = %v, want %v", err, baton.ErrClosed)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	// Closing the session removed the entry at once.
	other := dial(t, "", zklock.Options{})
	if es := entries(t, other, name); len(es) != 0 {
		t.Errorf("Entries(%q) after Close = %v, want none", name, es)
	}
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url     string
		servers []string
		chroot  string
	}{
		{"zk://h1:2181,h2:2182/app", []string{"h1:2181", "h2:2182"}, "/app"},
		{"ZK://h1/", []string{"h1:2181"}, ""},
		{"zk://h1:2181", []string{"h1:2181"}, ""},
		{"zk://[::1]:2181,[fe80::1]/a/b/", []string{"[::1]:2181", "[fe80::1]:2181"}, "/a/b"},
	} {
		servers, chroot, err := zklock.ParseURL(tc.url)
		if err != nil || fmt.Sprint(servers) != fmt.Sprint(tc.servers) || chroot != tc.chroot {
			t.Errorf("ParseURL(%q) = %v, %q, %v; want %v, %q", tc.url, servers, chroot, err, tc.servers, tc.chroot)
		}
	}
	for _, bad := range []string{
		"", "etcd://h1:2379", "zk://", "zk:///app", "zk://h1:2181,,h2", "zk://h1:0", "zk://h1:x",
		"zk://::1:2181", "zk://[::1", "zk://u:p@h1:2181", "zk://h1/a/../b", "zk://h1/a?x=1", "zk://h1/a//b",
	} {
		if s, c, err := zklock.ParseURL(bad); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("ParseURL(%q) = %v, %q, %v; want %v", bad, s, c, err, baton.ErrInvalidOption)
		}
	}
}

func TestDialUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := zklock.Dial(ctx, []string{"127.0.0.1:1"}, zklock.Options{SessionTimeout: time.Second})
	if !errors.Is(err, baton.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial(unreachable) = %v, %v; want %v and %v", c, err, baton.ErrUnavailable, context.DeadlineExceeded)
	}
	if d := time.Since(start); d > 550*time.Millisecond {
		t.Fatalf("Dial(unreachable) took %v, want ≤ deadline + 250ms", d)
	}
	if _, err := zklock.Dial(t.Context(), nil, zklock.Options{}); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Dial(no servers) = %v, want %v", err, baton.ErrInvalidOption)
	}
	if _, err := zklock.Dial(t.Context(), []string{"h:1"}, zklock.Options{SessionTimeout: -1}); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Dial(negative timeout) = %v, want %v", err, baton.ErrInvalidOption)
	}
}

func TestDigestAuth(t *testing.T) {
	cred := []zklock.Digest{{User: "baton-" + zklock.NewUUID()[:8], Password: "secret"}}
	root := "/baton-test-auth-" + zklock.NewUUID()[:8]
	a := dial(t, "", zklock.Options{Chroot: root, Auth: cred})
	name := "locked"
	l := lock(t, mutex(t, a, name))
	defer release(t, l)
	same := dial(t, "", zklock.Options{Chroot: root, Auth: cred})
	if es := entries(t, same, name); len(es) != 1 {
		t.Fatalf("Entries(%q) with the same credentials = %v, want 1 entry", name, es)
	}
	anon := dial(t, "", zklock.Options{Chroot: root})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if es, err := anon.Entries(ctx, name); !errors.Is(err, baton.ErrAuth) {
		t.Fatalf("Entries(%q) without credentials = %v, %v; want %v", name, es, err, baton.ErrAuth)
	}
	if _, err := zklock.Dial(ctx, []string{"h:1"}, zklock.Options{Auth: []zklock.Digest{{User: "a:b"}}}); !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Dial(user with colon) = %v, want %v", err, baton.ErrInvalidOption)
	}
}
