package drill_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/drill/drilltest"
	"github.com/baton-go/baton/drill/internal/etcdtest"
	batonengine "github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
)

// The recipe drills (rows 3, 4 and 8 of docs/faults.md for the RW lock,
// the semaphore and leader election) share one shape: an "old" holder of
// the recipe's exclusive role — the writer, one of N permits, the leader —
// suffers the fault, a "new" client waits for the role, and (semaphore) a
// "peer" holds another permit throughout. What the fault may break is the
// role's exclusion at the resource:
//
//   - RW lock and election: the role is exclusive, so the resource is the
//     fenced counter and its unfenced twin of the mutex drills; the writer's
//     token, the leader's epoch, is the fencing token (a deposed leader's
//     late commit is Jepsen's and J7's story).
//   - Semaphore: N holders are legitimate at once, so one fence cannot
//     guard the resource; it is a drill.Permits (an admission table of at
//     most N grants, the oldest evicted by a newer one) and its unfenced
//     twin, and the check is drill.CheckOccupancy: never more than N grants
//     working at the resource. Its negative control shows N+1.
//
// Readers of the RW lock share and are not the subject of these faults;
// the writer against the next writer is.
//
// The mutex is a recipe too, for the engines whose other recipes the
// drills do not drive (yet): the lease engines run rows 3, 4 and 8 on it.

// recipeEngine is what both engines' clients offer beyond the mutex.
type recipeEngine interface {
	RWMutex(name string) (*baton.RWMutex, error)
	Semaphore(name string, n int) (*baton.Semaphore, error)
	Election(name string) (*baton.Election, error)
}

// semPermits is N of the semaphore drills.
const semPermits = 2

// recipe is one recipe as the drills drive it.
type recipe struct {
	name    string
	permits int // holders of the role at once
}

var allRecipes = []recipe{{"rw", 1}, {"sem", semPermits}, {"leader", 1}}

// mutexRecipe is the exclusive lock itself as a recipe.
var mutexRecipe = recipe{"mutex", 1}

func recipeNamed(name string) (recipe, bool) {
	for _, r := range append([]recipe{mutexRecipe}, allRecipes...) {
		if r.name == name {
			return r, true
		}
	}
	return recipe{}, false
}

// forEachRecipe runs f as a parallel subtest per recipe of e: the drills
// mostly wait for expiries, so the recipes of one engine overlap in time.
func forEachRecipe(t *testing.T, e *engine, f func(t *testing.T, rc recipe)) {
	for _, rc := range e.recipes {
		t.Run(rc.name, func(t *testing.T) {
			t.Parallel()
			f(t, rc)
		})
	}
}

// role is a taken role: the lease, and the leadership for elections.
type role struct {
	lease  *baton.Lease
	leader *baton.Leader
}

// take acquires the recipe's role on lc: the lock, the write side, a
// permit, the leadership (campaigning as id).
func (r recipe) take(ctx context.Context, lc *lockClient, name, id string) (role, error) {
	eng := lc.recipes
	switch r.name {
	case "mutex":
		m, err := lc.mutex(name)
		if err != nil {
			return role{}, err
		}
		l, err := m.Lock(ctx)
		return role{lease: l}, err
	case "rw":
		m, err := eng.RWMutex(name)
		if err != nil {
			return role{}, err
		}
		l, err := m.Lock(ctx)
		return role{lease: l}, err
	case "sem":
		s, err := eng.Semaphore(name, r.permits)
		if err != nil {
			return role{}, err
		}
		l, err := s.Acquire(ctx)
		return role{lease: l}, err
	case "leader":
		el, err := eng.Election(name)
		if err != nil {
			return role{}, err
		}
		ld, err := el.CampaignAs(ctx, id)
		if err != nil {
			return role{}, err
		}
		return role{lease: ld.Lease(), leader: ld}, nil
	}
	return role{}, fmt.Errorf("unknown recipe %q", r.name)
}

// release gives the role back: a leader resigns (in its documented order).
func (g role) release(ctx context.Context) error {
	if g.leader != nil {
		return g.leader.Resign(ctx, baton.ResignPlan{})
	}
	return g.lease.Release(ctx)
}

// queueDir is where the recipe queues the role's entries; dirs are every
// directory it makes under name (orphan scans).
func (r recipe) queueDir(name string) string {
	if r.name == "sem" {
		return name + "/leases"
	}
	return name
}

func (r recipe) dirs(name string) []string {
	if r.name == "sem" {
		return []string{name + "/leases", name + "/locks"}
	}
	return []string{name}
}

// recipeName returns a name private to one trial of a recipe drill.
func recipeName(row string, e *engine, rc recipe, seed uint64) string {
	return fmt.Sprintf("drill/%s/%s/%s/%d", row, e.name, rc.name, seed)
}

// actor is a client of a recipe drill: its grants, releases and lease
// states go into the run's history under the recipe's name.
type actor struct {
	id   string
	run  *drilltest.Run
	rc   recipe
	name string // normalised, as the lease reports it
	lc   *lockClient

	wg sync.WaitGroup // lease observers
}

func newActor(t *testing.T, run *drilltest.Run, e *engine, rc recipe, id, name string, o clientOpts) *actor {
	t.Helper()
	n, err := batonengine.ValidateName(name)
	if err != nil {
		t.Fatalf("ValidateName(%q) = %v", name, err)
	}
	a := &actor{id: id, run: run, rc: rc, name: n}
	// Registered before the client's Close, so it runs after it: Close
	// ends every lease, and with them the observers.
	t.Cleanup(a.wg.Wait)
	a.lc = e.open(t, o)
	return a
}

// take acquires the role and records it; on success it records every later
// state change of the lease until it ends.
func (a *actor) take(ctx context.Context) (role, error) {
	op := a.run.Rec.Begin(a.id, drill.OpAcquire, a.name, 0)
	g, err := a.rc.take(ctx, a.lc, a.name, a.id)
	if err != nil {
		op.Fail(err) // the contract: an error means not holding
		return role{}, err
	}
	op.End(drill.Ok, func(e *drill.Event) { e.Token, e.Entry = g.lease.Token(), g.lease.Owner() })
	a.wg.Add(1)
	go observeLease(&a.wg, a.run.Rec, a.id, g.lease) // owner: the lease; ends with it
	return g, nil
}

// observeLease records every state change of l until it ends.
func observeLease(wg *sync.WaitGroup, rec *drill.Recorder, client string, l *baton.Lease) {
	defer wg.Done()
	st, ch := l.Observe()
	for !st.Ended() {
		<-ch
		st, ch = l.Observe()
		rec.Record(drill.Event{Client: client, Op: drill.OpState, Phase: drill.Info, Name: l.Name(), Token: l.Token(), Detail: st.String()})
	}
}

// release releases g and records it; a failed release has an unknown
// outcome.
func (a *actor) release(ctx context.Context, g role) error {
	op := a.run.Rec.Begin(a.id, drill.OpRelease, a.name, g.lease.Token())
	err := g.release(ctx)
	if err != nil {
		op.Unknown(err)
	} else {
		op.Ok()
	}
	return err
}

// queueLen returns the number of entries in the role's queue of name.
func (a *actor) queueLen(ctx context.Context) (int, error) {
	es, err := a.lc.entries(ctx, a.rc.queueDir(a.name))
	return len(es), err
}

// Resource names of the semaphore drills.
const (
	resPermits         = "res/permits"
	resPermitsUnfenced = "res/permits-unfenced"
)

// stage is the resource side of a recipe drill (see the top of this file).
type stage struct {
	rc     recipe
	res    *counters      // rw, leader
	fp, up *drill.Permits // sem: fenced and unfenced
}

func newStage(t *testing.T, run *drilltest.Run, rc recipe) *stage {
	t.Helper()
	s := &stage{rc: rc, res: newCounters(t, run)}
	if rc.name == "sem" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if s.fp, err = drill.NewPermits(ctx, s.res.fenced.DB, resPermits, rc.permits, true); err != nil {
			t.Fatalf("NewPermits = %v", err)
		}
		if s.up, err = drill.NewPermits(ctx, s.res.fenced.DB, resPermitsUnfenced, rc.permits, false); err != nil {
			t.Fatalf("NewPermits = %v", err)
		}
	}
	return s
}

// openStage joins the stage of a parent's drill (in the holder child).
func openStage(db *sql.DB, rc recipe) *stage {
	s := &stage{rc: rc, res: &counters{
		fName:    resFenced,
		uName:    resUnfenced,
		fenced:   drill.OpenCounter(db, fence.SQLite, resFenced, true),
		unfenced: drill.OpenCounter(db, fence.SQLite, resUnfenced, false),
	}}
	if rc.name == "sem" {
		s.fp = drill.OpenPermits(db, resPermits, rc.permits, true)
		s.up = drill.OpenPermits(db, resPermitsUnfenced, rc.permits, false)
	}
	return s
}

// begin is what a holder does at the resource right after its grant: a
// semaphore holder enters.
func (s *stage) begin(ctx context.Context, rec *drill.Recorder, client string, g role) (fenced, unfenced error) {
	if s.rc.name != "sem" {
		return nil, nil
	}
	tok, owner := g.lease.Token(), g.lease.Owner()
	return s.fp.RecordedEnter(ctx, rec, client, tok, owner), s.up.RecordedEnter(ctx, rec, client, tok, owner)
}

// work is one unit of work at both resources.
func (s *stage) work(ctx context.Context, rec *drill.Recorder, client string, g role) (fenced, unfenced error) {
	tok, owner := g.lease.Token(), g.lease.Owner()
	if s.rc.name == "sem" {
		return s.fp.RecordedUse(ctx, rec, client, tok, owner), s.up.RecordedUse(ctx, rec, client, tok, owner)
	}
	return s.res.fenced.Increment(ctx, rec, client, tok, owner), s.res.unfenced.Increment(ctx, rec, client, tok, owner)
}

// decide starts a unit of work now and returns its commit, to be sent
// later without looking at the lease: the write a process had already
// decided on when the fault hit. On the counters it is a read now and a
// write of read+1 at commit; on the permits, a use at commit.
func (s *stage) decide(ctx context.Context, rec *drill.Recorder, client string, g role) (commit func(context.Context) (fenced, unfenced error), err error) {
	tok, owner := g.lease.Token(), g.lease.Owner()
	if s.rc.name == "sem" {
		return func(ctx context.Context) (error, error) { return s.work(ctx, rec, client, g) }, nil
	}
	fv, ferr := s.res.fenced.RecordedRead(ctx, rec, client, tok, owner)
	uv, uerr := s.res.unfenced.RecordedRead(ctx, rec, client, tok, owner)
	if err := errors.Join(ferr, uerr); err != nil {
		return nil, err
	}
	return func(ctx context.Context) (error, error) {
		return s.res.fenced.RecordedWrite(ctx, rec, client, tok, owner, fv+1),
			s.res.unfenced.RecordedWrite(ctx, rec, client, tok, owner, uv+1)
	}, nil
}

// end is what a holder does at the resource before it releases: a
// semaphore holder leaves.
func (s *stage) end(ctx context.Context, rec *drill.Recorder, client string, g role) {
	if s.rc.name == "sem" {
		tok, owner := g.lease.Token(), g.lease.Owner()
		_ = s.fp.RecordedLeave(ctx, rec, client, tok, owner)
		_ = s.up.RecordedLeave(ctx, rec, client, tok, owner)
	}
}

// check runs the resource checkers. The fenced resource must keep the
// role's exclusion (I1, I3); wantControlRed says the fault can break it,
// so the unfenced twin must show the violation.
func (s *stage) check(t *testing.T, run *drilltest.Run, wantControlRed bool) {
	t.Helper()
	if s.rc.name != "sem" {
		s.res.check(t, run, wantControlRed)
		return
	}
	events := run.Rec.Events()
	vs, err := drill.CheckOccupancy(events, resPermits, s.rc.permits)
	if err != nil {
		t.Errorf("CheckOccupancy(fenced) = %v", err)
	}
	run.Report(vs)
	uvs, err := drill.CheckOccupancy(events, resPermitsUnfenced, s.rc.permits)
	if err != nil {
		t.Errorf("CheckOccupancy(unfenced) = %v", err)
	}
	switch {
	case wantControlRed && len(uvs) == 0:
		t.Errorf("negative control: the unfenced resource never had more than %d holders at once; want %d (the drill could not fail)", s.rc.permits, s.rc.permits+1)
	case !wantControlRed && len(uvs) > 0:
		t.Errorf("unfenced resource had too many holders without a fault that breaks exclusion (the semaphore itself failed: I1)")
		run.Report(uvs)
	default:
		t.Logf("negative control: unfenced permits %v", uvs)
	}
}

// checkHolders is I7 for the recipe: CheckExclusive, or CheckHolders with
// N for the semaphore.
func (s *stage) checkHolders(run *drilltest.Run, name string) {
	run.Report(drill.CheckHolders(run.Rec.Events(), name, s.rc.permits))
}

// orphans checks I8 on every directory of the recipe.
func (s *stage) orphans(ctx context.Context, run *drilltest.Run, a *actor, wait time.Duration) {
	for _, d := range s.rc.dirs(a.name) {
		run.Report(drill.Orphans(ctx, d, wait, a.lc.entries))
	}
}

// waitQueue waits until the role's queue of a.name has at least n entries.
// A lease engine has no queue: it waits for the holders' rows and lets the
// waiter make its first attempts (see waitEntriesOr).
func waitQueue(t *testing.T, a *actor, n int) {
	t.Helper()
	if a.lc.lease {
		n = min(n-1, a.rc.permits)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		k, err := a.queueLen(ctx)
		if err == nil && k >= n {
			if a.lc.lease {
				time.Sleep(waiterSettle)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("queue %q: %d entries (err %v), want ≥ %d", a.rc.queueDir(a.name), k, err, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The recipe holder child: the test binary re-executed with
// recipeHolderEnv set to the engine. It takes the recipe's role, enters
// and works at the resource, reports "ready", and waits. SIGTERM makes it
// leave and release — what `baton run` does, and what a library user's
// signal handler does — then exit; SIGKILL just ends it.
const (
	recipeHolderEnv = "BATON_DRILL_RECIPE_HOLDER"
	recipeEnv       = "BATON_DRILL_RECIPE"
)

func recipeHolderMain() int {
	rec := drill.NewRecorder(os.Stdout)
	client, name := os.Getenv(holderClient), os.Getenv(holderName)
	fail := func(what string, err error) int {
		rec.Info(client, "error", name, what+": "+err.Error())
		return 2
	}
	// Installed first: a SIGTERM at any moment releases, never kills.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, ok := recipeNamed(os.Getenv(recipeEnv))
	if !ok {
		return fail("recipe", fmt.Errorf("unknown recipe %q", os.Getenv(recipeEnv)))
	}
	lc, err := dialChild(ctx, os.Getenv(recipeHolderEnv), os.Getenv(holderEndpoint))
	if err != nil {
		return fail("dial", err)
	}
	defer lc.close()
	db, _, err := openResource(os.Getenv(holderDB))
	if err != nil {
		return fail("resource", err)
	}
	defer db.Close()
	st := openStage(db, rc)

	op := rec.Begin(client, drill.OpAcquire, name, 0)
	g, err := rc.take(ctx, lc, name, client)
	if err != nil {
		op.Fail(err)
		return 2
	}
	op.End(drill.Ok, func(e *drill.Event) { e.Token, e.Entry = g.lease.Token(), g.lease.Owner() })
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go observeLease(&wg, rec, client, g.lease) // owner: the lease; ends with it
	if ferr, uerr := st.begin(ctx, rec, client, g); ferr != nil || uerr != nil {
		return fail("enter", errors.Join(ferr, uerr))
	}
	if ferr, uerr := st.work(ctx, rec, client, g); ferr != nil || uerr != nil {
		return fail("work", errors.Join(ferr, uerr))
	}
	rec.Info(client, "ready", name, "")
	select {
	case <-term:
		rec.Info(client, "sigterm", name, "")
	case <-ctx.Done():
		return fail("wait", ctx.Err())
	}
	st.end(ctx, rec, client, g)
	rop := rec.Begin(client, drill.OpRelease, name, g.lease.Token())
	if err := g.release(ctx); err != nil {
		rop.Fail(err)
	} else {
		rop.Ok()
	}
	rec.Info(client, "exit", name, "")
	return 0
}

// startRecipeHolder starts the recipe holder child for e, ingesting its
// history into run's recorder.
func startRecipeHolder(t *testing.T, run *drilltest.Run, e *engine, rc recipe, id, name, dbPath string) *child {
	t.Helper()
	return startChild(t, run, recipeHolderEnv+"="+e.name, recipeEnv+"="+rc.name, holderEndpoint+"="+e.endpoint,
		holderName+"="+name, holderDB+"="+dbPath, holderClient+"="+id)
}

// startChild re-executes the test binary with env added, ingesting the
// history lines it prints into run's recorder. The child is killed at
// cleanup (after a SIGCONT, should it be stopped).
func startChild(t *testing.T, run *drilltest.Run, env ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	c := &child{cmd: cmd, stdin: stdin, done: make(chan struct{}), notify: make(chan struct{})}
	go func() { // owner: the child; ends at its stdout's EOF
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			es, err := drill.ReadHistory(strings.NewReader(sc.Text()))
			if err != nil || len(es) != 1 {
				continue // not a history line
			}
			run.Rec.Ingest(es[0])
			c.mu.Lock()
			c.seen = append(c.seen, es[0])
			close(c.notify)
			c.notify = make(chan struct{})
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-c.done
		_ = cmd.Wait()
	})
	return c
}

// The etcd child: the test binary re-executed with etcdChildEnv set runs
// an embedded etcd (internal/etcdtest) and prints "endpoint <addr>", so a
// drill can SIGSTOP a server without stopping itself. It stops when its
// stdin closes.
const etcdChildEnv = "BATON_DRILL_ETCD_CHILD"

func etcdChildMain() int {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		os.Setenv("TMPDIR", "/dev/shm")
	}
	s, err := etcdtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdtest:", err)
		return 1
	}
	defer s.Close()
	fmt.Printf("endpoint %s\n", s.Endpoint)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// pausable is a server process a drill may SIGSTOP.
type pausable struct {
	addr string
	proc *os.Process
}

func (p *pausable) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.proc.Signal(sig); err != nil {
		t.Fatalf("server: signal %v: %v", sig, err)
	}
	if sig != syscall.SIGSTOP {
		return
	}
	// A signal is delivered asynchronously: until the process is really
	// stopped it may still answer a request, and a probe sent right after
	// SIGSTOP would be granted by a server that is not frozen yet.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.proc.Pid))
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			return
		}
	}
}

// startEtcdChild starts the etcd child and returns its endpoint. It is
// stopped at cleanup.
func startEtcdChild(t *testing.T) *pausable {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), etcdChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start etcd child: %v", err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	line := make(chan string, 1)
	go func() { // owner: the child; ends at its exit
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if ep, ok := strings.CutPrefix(sc.Text(), "endpoint "); ok {
				line <- ep
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case ep := <-line:
		return &pausable{addr: ep, proc: cmd.Process}
	case <-exited:
		t.Fatal("etcd child exited before it was ready")
	case <-time.After(30 * time.Second):
		t.Fatal("etcd child not ready after 30s")
	}
	return nil
}

// startPrivateZK starts a ZooKeeper of its own for the test (the java
// command line and settings of scripts/servers.sh, another port, a temp
// dir) and returns its address. It is killed at cleanup.
func startPrivateZK(t *testing.T) *pausable {
	t.Helper()
	java := testenv.Binary(t, "java")
	cp := "/etc/zookeeper/conf"
	for _, j := range []string{"zookeeper", "zookeeper-jute", "netty-handler", "netty-common", "netty-buffer", "netty-transport",
		"netty-resolver", "netty-codec", "netty-transport-native-epoll", "netty-transport-native-unix-common",
		"slf4j-api", "slf4j-simple", "commons-cli", "commons-io", "metrics-core", "snappy-java", "jline"} {
		if p := "/usr/share/java/" + j + ".jar"; fileExists(p) {
			cp += ":" + p
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	conf := fmt.Sprintf("tickTime=200\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\nminSessionTimeout=400\nmaxSessionTimeout=60000\n4lw.commands.whitelist=*\nadmin.enableServer=false\n",
		filepath.Join(dir, "data"), port)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "zk.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(java, "-Xmx256m", "-Dzookeeper.admin.enableServer=false", "-Dznode.container.checkIntervalMs=500",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, "org.apache.zookeeper.server.ZooKeeperServerMain", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start private ZooKeeper: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if out, err := fourLetterWord(addr, "ruok"); err == nil && out == "imok" {
			return &pausable{addr: addr, proc: cmd.Process}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "zk.log"))
			t.Fatalf("private ZooKeeper at %s not ready after 60s; log:\n%s", addr, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func fourLetterWord(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return strings.TrimSpace(string(b)), err
}
