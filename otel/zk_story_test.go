package batonotel_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/internal/faultproxy"
	"github.com/baton-go/baton/internal/testenv"
	batonotel "github.com/baton-go/baton/otel"
	"github.com/baton-go/baton/zklock"

	_ "modernc.org/sqlite"
)

// The paused holder: the test binary re-executed with holderEnv set. It
// takes the lock on ZooKeeper inside a span of its own ("holder.job"),
// with an Observer on in-memory SDK providers, prints "granted <token>"
// and every state of its lease, waits for the lease to end (the parent
// SIGSTOPs it past the session timeout meanwhile), makes its late write
// at the fenced SQLite table in the job's context, and writes its spans
// and its counters as JSON to the file holderOut names.
const (
	holderEnv  = "BATON_OTEL_HOLDER" // the ZooKeeper address (a fault proxy)
	holderName = "BATON_OTEL_HOLDER_NAME"
	holderDB   = "BATON_OTEL_HOLDER_DB"  // the SQLite file of the fence
	holderOut  = "BATON_OTEL_HOLDER_OUT" // where the JSON goes

	// pausedTimeout is the ZooKeeper session timeout of the story.
	pausedTimeout = 3 * time.Second
)

func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		os.Exit(holderMain())
	}
	os.Exit(m.Run())
}

// dump is what the child hands the parent.
type dump struct {
	Spans []spanJSON
	Sums  []pointJSON // every int64 counter and up-down counter point
}

type spanJSON struct {
	Name, SpanID, ParentID string
	Status                 string // "Error", "Unset", "Ok"
	Attrs                  map[string]string
	Events                 []eventJSON
}

type eventJSON struct {
	Name  string
	Attrs map[string]string
}

type pointJSON struct {
	Name  string
	Attrs map[string]string
	Value int64
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func holderMain() int {
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "holder: %s: %v\n", what, err)
		fmt.Println("error", what)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	o, err := batonotel.New(batonotel.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		return fail("observer", err)
	}

	client, err := zklock.Dial(ctx, []string{os.Getenv(holderEnv)}, zklock.Options{SessionTimeout: pausedTimeout, Observer: o})
	if err != nil {
		return fail("dial", err)
	}
	defer client.Close()
	name := os.Getenv(holderName)
	tbl, db, err := openFence(ctx, os.Getenv(holderDB), o)
	if err != nil {
		return fail("fence", err)
	}
	defer db.Close()
	m, err := client.Mutex(name)
	if err != nil {
		return fail("mutex", err)
	}
	jobCtx, job := tp.Tracer("holder").Start(ctx, "holder.job")
	l, err := m.Lock(jobCtx)
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
	// without looking at its lease again, in the job's context.
	werr := tbl.Write(context.WithoutCancel(l.Context()), db, name, l.Token(), l.Owner(), func(*sql.Tx) error { return nil })
	if !errors.Is(werr, baton.ErrStaleToken) {
		return fail("late write", fmt.Errorf("%v, want %v", werr, baton.ErrStaleToken))
	}
	job.End()
	fmt.Println("lost", l.Err())
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return fail("collect", err)
	}
	if err := writeDump(os.Getenv(holderOut), exp.GetSpans(), rm); err != nil {
		return fail("dump", err)
	}
	fmt.Println("done")
	return 0
}

func writeDump(path string, spans tracetest.SpanStubs, rm metricdata.ResourceMetrics) error {
	var d dump
	for _, s := range spans {
		sj := spanJSON{Name: s.Name, SpanID: s.SpanContext.SpanID().String(), ParentID: s.Parent.SpanID().String(),
			Status: s.Status.Code.String(), Attrs: attrMap(s.Attributes)}
		for _, e := range s.Events {
			sj.Events = append(sj.Events, eventJSON{Name: e.Name, Attrs: attrMap(e.Attributes)})
		}
		d.Spans = append(d.Spans, sj)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if sum, ok := mt.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range sum.DataPoints {
					d.Sums = append(d.Sums, pointJSON{Name: mt.Name, Attrs: attrMap(dp.Attributes.ToSlice()), Value: dp.Value})
				}
			}
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
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

// await returns the rest of the child's next line starting with word,
// skipping others.
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
// two processes, as its spans tell it: the child holder is cut off (a
// blackhole at a fault proxy), reports Suspended, and is SIGSTOPped past
// its session timeout; the parent is granted the lock with a larger token
// and writes; the child, resumed, finds its lease lost and its late write
// refused. (Cut off first because a process stopped while healthy wakes
// past the loss threshold and goes from Held straight to Lost.) The
// child's spans must be one baton.acquire and one baton.hold, the hold
// ended in error with the child's token and a baton.suspended event, and
// the job span must carry the stale rejection with the parent's token.
func TestPausedHolderZK(t *testing.T) {
	zk := testenv.ZK(t)
	proxy, err := faultproxy.Start(zk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	name := "baton-test/otel-paused/" + baton.NewOwnerID()[:8]
	dir := t.TempDir()
	dbPath, out := filepath.Join(dir, "fence.db"), filepath.Join(dir, "holder.json")
	r := newRig(t, batonotel.Options{})
	tbl, db, err := openFence(t.Context(), dbPath, r.o)
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
	client, err := zklock.Dial(ctx, []string{zk}, zklock.Options{SessionTimeout: pausedTimeout, Observer: r.o})
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
	var res result
	select {
	case res = <-got:
	case <-time.After(30 * time.Second):
		h.signal(t, syscall.SIGCONT)
		t.Fatal("the second client was not granted while the holder was stopped")
	}
	if res.err != nil {
		h.signal(t, syscall.SIGCONT)
		t.Fatalf("second Lock = %v", res.err)
	}
	lb := res.l
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

	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var d dump
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("holder's JSON: %v", err)
	}
	checkChildSpans(t, d.Spans, name, childToken, lb.Token())
	checkChildSums(t, d.Sums)

	// The parent's own spans: its acquire granted with the larger token,
	// and its hold still open.
	spans := r.spans.GetSpans()
	if len(spans) != 1 || spans[0].Name != "baton.acquire" {
		t.Fatalf("parent's ended spans: %d, want its one baton.acquire", len(spans))
	}
	if v, _ := attr(spans[0].Attributes, "baton.token"); v.AsInt64() != int64(lb.Token()) {
		t.Errorf("parent's acquire span: baton.token %v, want %d", v.Emit(), lb.Token())
	}
	if v, _ := attr(spans[0].Attributes, "baton.result"); v.AsString() != "granted" {
		t.Errorf("parent's acquire span: baton.result %q, want granted", v.Emit())
	}
	if err := lb.Release(t.Context()); err != nil {
		t.Errorf("Release = %v", err)
	}
}

func checkChildSpans(t *testing.T, spans []spanJSON, name string, childToken, storedToken uint64) {
	t.Helper()
	byName := map[string][]spanJSON{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	if len(spans) != 3 || len(byName["baton.acquire"]) != 1 || len(byName["baton.hold"]) != 1 || len(byName["holder.job"]) != 1 {
		t.Fatalf("holder's spans %v, want one each of baton.acquire, baton.hold, holder.job", byName)
	}
	acq, hold, job := byName["baton.acquire"][0], byName["baton.hold"][0], byName["holder.job"][0]
	tok := strconv.FormatUint(childToken, 10)
	if acq.Status != "Unset" || acq.Attrs["baton.result"] != "granted" || acq.Attrs["baton.token"] != tok {
		t.Errorf("holder's acquire span %+v, want granted with token %s", acq, tok)
	}
	if hold.Status != "Error" || hold.Attrs["baton.token"] != tok || hold.Attrs["baton.hold.end"] != "lost" || hold.Attrs["baton.lock.name"] != name {
		t.Errorf("holder's hold span %+v, want lost (error) with token %s", hold, tok)
	}
	t.Logf("holder's hold span: baton.lost.cause=%q", hold.Attrs["baton.lost.cause"])
	if c := hold.Attrs["baton.lost.cause"]; c != "session_expired" && c != "other" {
		t.Errorf("hold span cause %q, want session_expired (or other, before the queue wraps baton.ErrSessionLost)", c)
	}
	var suspended int
	for _, e := range hold.Events {
		if e.Name == "baton.suspended" {
			suspended++
		}
	}
	if suspended != 1 {
		t.Errorf("hold span events %+v, want one baton.suspended", hold.Events)
	}
	if acq.ParentID != job.SpanID || hold.ParentID != job.SpanID {
		t.Errorf("acquire's parent %s, hold's %s, want the job span %s", acq.ParentID, hold.ParentID, job.SpanID)
	}
	var stale []eventJSON
	for _, e := range job.Events {
		if e.Name == "baton.stale_rejected" {
			stale = append(stale, e)
		}
	}
	if len(stale) != 1 {
		t.Fatalf("job span events %+v, want one baton.stale_rejected", job.Events)
	}
	want := map[string]string{"baton.token": tok, "baton.stored_token": strconv.FormatUint(storedToken, 10),
		"baton.resource": name, "baton.lock.name": name, "baton.owner": hold.Attrs["baton.owner"]}
	for k, v := range want {
		if stale[0].Attrs[k] != v {
			t.Errorf("stale rejection %s = %q, want %q", k, stale[0].Attrs[k], v)
		}
	}
}

func checkChildSums(t *testing.T, sums []pointJSON) {
	t.Helper()
	get := func(name string, match func(map[string]string) bool) int64 {
		var found []pointJSON
		for _, p := range sums {
			if p.Name == name && match(p.Attrs) {
				found = append(found, p)
			}
		}
		if len(found) != 1 {
			t.Fatalf("holder's %s: %d points match, want 1 (%+v)", name, len(found), sums)
		}
		return found[0].Value
	}
	zk := func(a map[string]string) bool { return a["baton.engine"] == "zk" && a["baton.recipe"] == "mutex" }
	for _, c := range []struct {
		name  string
		match func(map[string]string) bool
		want  int64
	}{
		{"baton.suspensions", zk, 1},
		{"baton.losses", zk, 1},
		{"baton.acquires", func(a map[string]string) bool { return zk(a) && a["baton.result"] == "granted" }, 1},
		{"baton.stale_rejections", func(a map[string]string) bool { return a["baton.engine"] == "fence" }, 1},
		{"baton.leases.held", zk, 0},
		{"baton.leases.suspended", zk, 0},
		{"baton.acquires.waiting", zk, 0},
	} {
		if got := get(c.name, c.match); got != c.want {
			t.Errorf("holder's %s = %d, want %d", c.name, got, c.want)
		}
	}
}
