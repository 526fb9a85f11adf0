package kubelock_test

import (
	"context"
	"database/sql"
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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/kubelock"

	_ "modernc.org/sqlite"
)

// faultSet is the private kube-apiserver deployment the fault drills
// break (scripts/servers.d/kube.sh's kube_fault set): killing its server
// or freezing its etcd must not fail the tests of other modules, which
// use the kube set.
type faultSet struct {
	kubeconfig string // admin
	pidfile    string // the apiserver's pid
	run        string // runs the apiserver again, writing pidfile
	etcdPID    int
	admin      kubernetes.Interface
	ns         string
}

// requireFaultSet returns the kube_fault set, skipping by hand and
// failing under CI=true when it is not configured. Its cleanup resumes a
// frozen etcd and restarts a killed server, so that a failed drill leaves
// the set as it found it.
func requireFaultSet(t *testing.T) *faultSet {
	t.Helper()
	f := &faultSet{
		kubeconfig: testenv.Require(t, "BATON_TEST_K8S_FAULT", "fault drills' kube-apiserver"),
		pidfile:    testenv.Require(t, "BATON_TEST_K8S_FAULT_PIDFILE", "fault drills' kube-apiserver pid file"),
		run:        testenv.Require(t, "BATON_TEST_K8S_FAULT_RUN", "fault drills' kube-apiserver run script"),
	}
	f.etcdPID = readPID(t, testenv.Require(t, "BATON_TEST_K8S_FAULT_ETCD_PIDFILE", "fault drills' etcd pid file"))
	rc, ns := kubeconfig(t, f.kubeconfig)
	f.admin, f.ns = clientset(t, rc), ns
	t.Cleanup(func() {
		_ = syscall.Kill(f.etcdPID, syscall.SIGCONT)
		if !alive(readPID(t, f.pidfile)) {
			f.startAPIServer(t)
		}
		if _, err := f.waitReady(60 * time.Second); err != nil {
			t.Errorf("the fault set's apiserver is not ready after the drill: %v", err)
		}
	})
	if _, err := f.waitReady(60 * time.Second); err != nil {
		t.Fatalf("the fault set's apiserver is not ready: %v", err)
	}
	return f
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 1 {
		t.Fatalf("pid file %s: %q", path, b)
	}
	return pid
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// client returns a kubelock client of the fault set's admin, observed by
// rec, closed at the end of the test.
func (f *faultSet) client(t *testing.T, ttl time.Duration, rec *recorder) *kubelock.Client {
	t.Helper()
	rc, ns := kubeconfig(t, f.kubeconfig)
	return clientOn(t, clientset(t, rc), ns, kubelock.Options{TTL: ttl, Observer: rec})
}

// killAPIServer kills the apiserver (SIGKILL: a crash) and waits for it
// to be gone.
func (f *faultSet) killAPIServer(t *testing.T) {
	t.Helper()
	pid := readPID(t, f.pidfile)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the apiserver (pid %d): %v", pid, err)
	}
	if !eventually(10*time.Second, func() bool { return !alive(pid) }) {
		t.Fatalf("the apiserver (pid %d) still runs 10s after SIGKILL", pid)
	}
}

// startAPIServer runs the set's run script detached (a session of its
// own, its parent gone at once), as kube.sh documents: the server outlives
// this test binary, and servers.sh stop finds it by its pid file.
func (f *faultSet) startAPIServer(t *testing.T) {
	t.Helper()
	log := filepath.Join(filepath.Dir(f.pidfile), "apiserver.log")
	cmd := exec.Command("bash", "-c", `nohup bash "$1" >>"$2" 2>&1 </dev/null &`, "-", f.run, log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restart the apiserver: %v: %s", err, out)
	}
}

// waitReady polls the apiserver's /readyz, then a list of Leases, until
// both answer; it returns how long that took.
func (f *faultSet) waitReady(within time.Duration) (time.Duration, error) {
	start := time.Now()
	var last error
	for time.Since(start) < within {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, last = f.admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if last == nil {
			_, last = f.admin.CoordinationV1().Leases(f.ns).List(ctx, metav1.ListOptions{Limit: 1})
		}
		cancel()
		if last == nil {
			return time.Since(start), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start), fmt.Errorf("not ready within %v: %w", within, last)
}

// freezeEtcd stops the apiserver's etcd for d (SIGSTOP … SIGCONT).
func (f *faultSet) freezeEtcd(t *testing.T, d time.Duration) {
	t.Helper()
	if err := syscall.Kill(f.etcdPID, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP etcd (pid %d): %v", f.etcdPID, err)
	}
	time.Sleep(d)
	if err := syscall.Kill(f.etcdPID, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT etcd (pid %d): %v", f.etcdPID, err)
	}
}

// stamped is one observed event and when (this process's clock: its
// monotonic reading orders events, its wall reading compares with the
// times the clients write into a Lease).
type stamped struct {
	e  baton.Event
	at time.Time
}

// recorder is an Observer keeping the lease events of one client.
type recorder struct {
	mu     sync.Mutex
	events []stamped
}

func (r *recorder) Observe(_ context.Context, e baton.Event) {
	switch e.Kind {
	case baton.EventGranted, baton.EventSuspended, baton.EventResumed, baton.EventLost, baton.EventReleased, baton.EventRenewal:
	default:
		return
	}
	at := time.Now()
	r.mu.Lock()
	r.events = append(r.events, stamped{e, at})
	r.mu.Unlock()
}

// of returns the events of kind recorded so far.
func (r *recorder) of(kind baton.EventKind) []stamped {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []stamped
	for _, s := range r.events {
		if s.e.Kind == kind {
			out = append(out, s)
		}
	}
	return out
}

// renewedAfter reports whether a renewal batch answered without error
// after t.
func (r *recorder) renewedAfter(t time.Time) bool {
	for _, s := range r.of(baton.EventRenewal) {
		if s.at.After(t) && s.e.Err == nil && !s.e.Late {
			return true
		}
	}
	return false
}

// resources is a fenced resource and its unfenced twin: two token tables
// in one SQLite file, the same writes sent to both.
type resources struct {
	db       *sql.DB
	fenced   fence.Table
	unfenced fence.Unfenced
}

func newResources(t *testing.T) *resources {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "fence.db") +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatalf("sql.Open(sqlite): %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	r := &resources{db: db, fenced: fence.Table{Name: "fenced", Dialect: fence.SQLite},
		unfenced: fence.Unfenced{Table: fence.Table{Name: "unfenced", Dialect: fence.SQLite}}}
	if err := r.fenced.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	if err := r.unfenced.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return r
}

// write sends one write (token, owner) to both resources: the fenced
// one's error and whether the unfenced one accepted it.
func (r *resources) write(ctx context.Context, res string, token uint64, owner string) (fenced error, unfencedOK bool, err error) {
	noop := func(*sql.Tx) error { return nil }
	fenced = r.fenced.Write(ctx, r.db, res, token, owner, noop)
	if fenced != nil && !errors.Is(fenced, baton.ErrStaleToken) {
		return fenced, false, fenced
	}
	if err := r.unfenced.Write(ctx, r.db, res, token, owner, noop); err != nil {
		return fenced, false, err
	}
	tok, own, err := r.unfenced.Current(ctx, r.db, res)
	return fenced, err == nil && tok == token && own == owner, err
}
