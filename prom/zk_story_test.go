package batonprom_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/internal/faultproxy"
	"github.com/baton-go/baton/internal/testenv"
	batonprom "github.com/baton-go/baton/prom"
	"github.com/baton-go/baton/zklock"

	_ "modernc.org/sqlite"
)

// The paused holder: the test binary re-executed with holderEnv set. It
// takes the lock on ZooKeeper with a Collector as its Observer, prints
// "granted <token>" and every state of its lease ("state suspended"),
// waits for its lease to end (the parent SIGSTOPs it past the session
// timeout meanwhile), makes the late write it had decided on at the
// fenced SQLite table, and writes its Collector's exposition text to the
// file holderOut names.
const (
	holderEnv  = "BATON_PROM_HOLDER" // the ZooKeeper address (a fault proxy)
	holderName = "BATON_PROM_HOLDER_NAME"
	holderDB   = "BATON_PROM_HOLDER_DB"  // the SQLite file of the fence
	holderOut  = "BATON_PROM_HOLDER_OUT" // where the exposition text goes

	// pausedTimeout is the ZooKeeper session timeout of the paused-holder
	// story: short, so the story is quick, and long enough that a child
	// under the race detector keeps its session until it is stopped.
	pausedTimeout = 3 * time.Second
)

func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		os.Exit(holderMain())
	}
	os.Exit(m.Run())
}

func holderMain() int {
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "holder: %s: %v\n", what, err)
		fmt.Println("error", what)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := batonprom.New(batonprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)

	client, err := zklock.Dial(ctx, []string{os.Getenv(holderEnv)}, zklock.Options{SessionTimeout: pausedTimeout, Observer: c})
	if err != nil {
		return fail("dial", err)
	}
	defer client.Close()
	name := os.Getenv(holderName)
	tbl, db, err := openFence(ctx, os.Getenv(holderDB), c)
	if err != nil {
		return fail("fence", err)
	}
	defer db.Close()
	m, err := client.Mutex(name)
	if err != nil {
		return fail("mutex", err)
	}
	l, err := m.Lock(ctx)
	if err != nil {
		return fail("lock", err)
	}
	fmt.Println("granted", l.Token())
	states := make(chan struct{})
	go func() { // owner: the lease; ends with it
		defer close(states)
		st, ch := l.Observe()
		for !st.Ended() {
			<-ch
			st, ch = l.Observe()
			fmt.Println("state", st)
		}
	}()
	select {
	case <-states: // the lease ended and its last state is printed
	case <-ctx.Done():
		return fail("lease", errors.New("never ended"))
	}
	// The write this holder had decided on before it was paused, made
	// without looking at its lease again.
	werr := tbl.Write(context.WithoutCancel(l.Context()), db, name, l.Token(), l.Owner(), func(*sql.Tx) error { return nil })
	if !errors.Is(werr, baton.ErrStaleToken) {
		return fail("late write", fmt.Errorf("%v, want %v", werr, baton.ErrStaleToken))
	}
	fmt.Println("lost", l.Err())
	if err := dumpText(reg, os.Getenv(holderOut)); err != nil {
		return fail("dump", err)
	}
	fmt.Println("done")
	return 0
}

// openFence opens the fence table in the SQLite file at path, reporting
// refusals to o. Both processes of the story open the same file.
func openFence(ctx context.Context, path string, o baton.Observer) (fence.Table, *sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_txlock=immediate")
	if err != nil {
		return fence.Table{}, nil, err
	}
	tbl := fence.Table{Dialect: fence.SQLite, Observer: o}
	if err := tbl.Migrate(ctx, db); err != nil {
		db.Close()
		return fence.Table{}, nil, err
	}
	return tbl, db, nil
}

// dumpText writes what reg gathers as Prometheus exposition text to
// the file at path.
func dumpText(reg prometheus.Gatherer, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := dumpTextTo(reg, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// dumpTextTo writes what reg gathers as Prometheus exposition text to w.
func dumpTextTo(reg prometheus.Gatherer, w io.Writer) error {
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// parseText parses exposition text with the Prometheus text parser.
func parseText(t *testing.T, r io.Reader) families {
	t.Helper()
	dec := expfmt.NewDecoder(r, expfmt.NewFormat(expfmt.TypeTextPlain))
	fams := families{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				return fams
			}
			t.Fatalf("parse exposition text: %v", err)
		}
		fams[mf.GetName()] = &mf
	}
}

// holder is the running child process.
type holder struct {
	cmd   *exec.Cmd
	lines chan string // its stdout, line by line; closed at EOF
}

func startHolder(t *testing.T, zk, name, dbPath, out string) *holder {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+zk, holderName+"="+name, holderDB+"="+dbPath, holderOut+"="+out)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start holder: %v", err)
	}
	h := &holder{cmd: cmd, lines: make(chan string, 16)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owner: the child; ends at its stdout's EOF
		defer wg.Done()
		defer close(h.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		for range h.lines {
		}
		wg.Wait()
		_ = cmd.Wait()
	})
	return h
}

// await returns the rest of the child's first line starting with word.
func (h *holder) await(t *testing.T, d time.Duration, word string) string {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-h.lines:
			if !ok {
				t.Fatalf("holder exited before %q", word)
			}
			if strings.HasPrefix(line, "error ") {
				t.Fatalf("holder: %s", line)
			}
			if rest, found := strings.CutPrefix(line, word); found {
				return strings.TrimSpace(rest)
			}
		case <-timer.C:
			t.Fatalf("holder: no %q after %v", word, d)
		}
	}
}

func (h *holder) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// TestPausedHolderZK is the paused-holder story on a real ZooKeeper, in
// two processes: the child holder is SIGSTOPped past its session timeout,
// the parent is granted the lock with a larger token and writes, and the
// child, resumed, finds its lease lost and its late write refused. The
// child's exposition text, parsed, must count exactly that.
//
// A process stopped while healthy wakes long past the loss threshold, and
// its session watchdog then declares Lost at once: whether Suspended comes
// first is a race with the connection's own timeout, so a suspension
// could be counted or not. The child's link to ZooKeeper therefore goes
// dark first (a blackhole at a fault proxy), and it is stopped once it
// reports Suspended: the story is a holder cut off and then paused, and
// every figure it counts is certain.
func TestPausedHolderZK(t *testing.T) {
	zk := testenv.ZK(t)
	proxy, err := faultproxy.Start(zk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	name := "baton-test/prom-paused/" + baton.NewOwnerID()[:8]
	dir := t.TempDir()
	dbPath, out := filepath.Join(dir, "fence.db"), filepath.Join(dir, "holder.prom")

	var mu sync.Mutex
	var grants []baton.Event
	c := batonprom.New(batonprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	obs := baton.ObserverFunc(func(ctx context.Context, e baton.Event) {
		c.Observe(ctx, e)
		if e.Kind == baton.EventGranted {
			mu.Lock()
			grants = append(grants, e)
			mu.Unlock()
		}
	})
	tbl, db, err := openFence(t.Context(), dbPath, obs)
	if err != nil {
		t.Fatalf("fence: %v", err)
	}
	t.Cleanup(func() { db.Close() })

	h := startHolder(t, proxy.Addr, name, dbPath, out)
	childToken, err := strconv.ParseUint(h.await(t, 30*time.Second, "granted"), 10, 64)
	if err != nil {
		t.Fatalf("holder's token: %v", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	client, err := zklock.Dial(ctx, []string{zk}, zklock.Options{SessionTimeout: pausedTimeout, Observer: obs})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	m, err := client.Mutex(name)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *baton.Lease
		err error
	}
	got := make(chan result, 1)
	go func() { // owner: this test; ends with ctx at the latest
		l, err := m.Lock(ctx)
		got <- result{l, err}
	}()

	if err := proxy.Blackhole(""); err != nil {
		t.Fatalf("Blackhole: %v", err)
	}
	if st := h.await(t, 30*time.Second, "state"); st != baton.Suspended.String() {
		t.Fatalf("holder's first state after the blackhole: %s, want %s", st, baton.Suspended)
	}
	h.signal(t, syscall.SIGSTOP)
	stopped := time.Now()
	var r result
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		h.signal(t, syscall.SIGCONT)
		t.Fatal("the second client was not granted while the holder was stopped")
	}
	if r.err != nil {
		h.signal(t, syscall.SIGCONT)
		t.Fatalf("second Lock = %v", r.err)
	}
	lb := r.l
	t.Logf("second client granted %v after the SIGSTOP, token %d (holder's %d)", time.Since(stopped).Round(time.Millisecond), lb.Token(), childToken)
	if lb.Token() <= childToken {
		t.Errorf("second token %d, want more than the holder's %d", lb.Token(), childToken)
	}
	if err := tbl.Write(lb.Context(), db, name, lb.Token(), lb.Owner(), func(*sql.Tx) error { return nil }); err != nil {
		t.Fatalf("second client's fenced write = %v", err)
	}
	h.signal(t, syscall.SIGCONT)
	if st := h.await(t, 30*time.Second, "state"); st != baton.Lost.String() {
		t.Errorf("holder's state after the SIGCONT: %s, want %s", st, baton.Lost)
	}
	t.Logf("holder's lease ended: %s", h.await(t, 30*time.Second, "lost"))
	h.await(t, 30*time.Second, "done")

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	child := parseText(t, f)
	zkLock := zkMutex
	wantValue(t, "holder: baton_suspensions_total", child.value(t, "baton_suspensions_total", zkLock), 1)
	causes := child["baton_losses_total"]
	if causes == nil || len(causes.GetMetric()) != 1 {
		t.Fatalf("holder: baton_losses_total series: %v", causes)
	}
	lossCause := ""
	for _, lp := range causes.GetMetric()[0].GetLabel() {
		if lp.GetName() == "cause" {
			lossCause = lp.GetValue()
		}
	}
	t.Logf("holder: a ZooKeeper session expiry is counted with cause=%q", lossCause)
	if lossCause != "session_expired" && lossCause != "other" {
		t.Errorf("holder: loss cause %q, want session_expired (or other, before the queue wraps baton.ErrSessionLost)", lossCause)
	}
	wantValue(t, "holder: baton_losses_total", child.value(t, "baton_losses_total", zkLock+",cause="+lossCause), 1)
	wantValue(t, "holder: baton_stale_rejections_total", child.value(t, "baton_stale_rejections_total", "engine=fence"), 1)
	child.gauges(t, "holder at exit", zkLock, 0, 0, 0)
	wantValue(t, "holder: baton_acquires_total{granted}", child.value(t, "baton_acquires_total", zkLock+",result=granted"), 1)
	n, _ := child.hist(t, "baton_hold_seconds", zkLock+",end=lost")
	wantCount(t, "holder: lost holds", n, 1)

	// The parent's own collector: its grant, held, and no stale write.
	mu.Lock()
	if len(grants) != 1 || grants[0].Token != lb.Token() || grants[0].Owner != lb.Owner() {
		t.Errorf("second client's Granted events %+v, want one with token %d", grants, lb.Token())
	}
	mu.Unlock()
	var buf strings.Builder
	if err := dumpTextTo(reg, &buf); err != nil {
		t.Fatal(err)
	}
	parent := parseText(t, strings.NewReader(buf.String()))
	parent.gauges(t, "second client holding", zkLock, 0, 1, 0)
	wantValue(t, "second client: baton_acquires_total{granted}", parent.value(t, "baton_acquires_total", zkLock+",result=granted"), 1)
	if parent["baton_stale_rejections_total"] != nil {
		t.Errorf("second client's collector counts stale rejections: %v", parent["baton_stale_rejections_total"])
	}
	if err := lb.Release(t.Context()); err != nil {
		t.Errorf("Release = %v", err)
	}
}
