package main_test

import (
	"bytes"
	"context"
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

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/cmd/baton/internal/embedetcd"
	"github.com/baton-go/baton/etcdlock"
	"github.com/baton-go/baton/faultproxy"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// batonBin is the baton binary built once for all tests: the CLI is tested
// as the process users run, with real exit codes and real signals.
var batonBin string

// buildTags lets the package build while an engine is unfinished.
var buildTags = os.Getenv("BATON_CLI_TEST_TAGS")

// raceBuild is set under -race (race_test.go).
var raceBuild bool

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "baton-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	batonBin = filepath.Join(dir, "baton")
	args := []string{"build", "-o", batonBin}
	if raceBuild {
		args = append(args, "-race")
	}
	if buildTags != "" {
		args = append(args, "-tags", buildTags)
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	stopEtcd()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	etcdOnce sync.Once
	etcdSrv  *embedetcd.Server
	etcdErr  error
)

// etcdURL returns the backend URL of an embedded etcd shared by the tests
// of this package (each test uses its own lock names).
func etcdURL(t *testing.T) string {
	t.Helper()
	etcdOnce.Do(func() { etcdSrv, etcdErr = embedetcd.Start() })
	if etcdErr != nil {
		t.Fatalf("embedetcd.Start() = %v", etcdErr)
	}
	return "etcd://" + etcdSrv.Endpoint
}

func stopEtcd() {
	if etcdSrv != nil {
		etcdSrv.Close()
	}
}

// result is one finished baton process.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// proc is a running baton process.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	start          time.Time
	done           chan struct{}
	res            result
}

// startBaton starts baton with args; env entries are added to a clean
// copy of the test's environment without BATON_* variables.
func startBaton(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return startBatonWith(t, nil, env, args...)
}

// startBatonWith is startBaton with a hook that adjusts the command first.
func startBatonWith(t *testing.T, setup func(*exec.Cmd), env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(batonBin, args...), done: make(chan struct{})}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BATON_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	// An orphaned COMMAND would hold the output pipes open; do not let
	// that hang the test (TestDiesWithBaton looks for such orphans).
	p.cmd.WaitDelay = 2 * time.Second
	if setup != nil {
		setup(p.cmd)
	}
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start baton %v: %v", args, err)
	}
	go func() { // owned by p; ends when the process does
		_ = p.cmd.Wait()
		p.res = result{
			code:   p.cmd.ProcessState.ExitCode(),
			stdout: p.stdout.String(),
			stderr: p.stderr.String(),
			took:   time.Since(p.start),
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait returns the process's result, killing it after limit.
func (p *proc) wait(t *testing.T, limit time.Duration) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("baton %v still running after %v; stderr:\n%s", p.cmd.Args[1:], limit, p.res.stderr)
	}
	return p.res
}

// waitFile waits for path, which p's COMMAND creates once baton holds the
// lock, and fails at once, with p's stderr, if p ends first.
func (p *proc) waitFile(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-p.done:
			if _, err := os.Stat(path); err == nil {
				return
			}
			t.Fatalf("baton %v exited %d before %s appeared; stderr:\n%s", p.cmd.Args[1:], p.res.code, path, p.res.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v; baton %v is still running", path, limit, p.cmd.Args[1:])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runBaton(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return startBaton(t, env, args...).wait(t, 30*time.Second)
}

// waitFile waits until path exists (a child's "I am running" mark).
func waitFile(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v", path, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rawEtcd is a plain etcd client of the test server, closed at the
// test's end: for what the tests put, read and count from outside baton.
func rawEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdSrv.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("clientv3.New() = %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// waitEntries waits until the etcd lock name has n queue entries (a
// waiter is queued), looking from outside with the etcd engine.
func waitEntries(t *testing.T, name string, n int) {
	t.Helper()
	cli := rawEtcd(t)
	lc, err := etcdlock.New(cli, etcdlock.Options{})
	if err != nil {
		t.Fatalf("etcdlock.New() = %v", err)
	}
	defer lc.Close()
	raw, _ := baton.As[*etcdlock.Client](lc) // the raw keys are etcd's own
	deadline := time.Now().Add(10 * time.Second)
	for {
		keys, err := raw.Entries(context.Background(), name)
		if err == nil && len(keys) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Entries(%q) = %v, %v; want %d entries within 10s", name, keys, err, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func lockName(t *testing.T) string {
	return "cli-test/" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		args []string
	}{
		{"no subcommand", nil, nil},
		{"unknown subcommand", nil, []string{"frobnicate"}},
		{"bad flag", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--bogus", "n", "--", "true"}},
		{"bad duration", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--wait", "soon", "n", "--", "true"}},
		{"ttl zero", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--ttl", "0", "n", "--", "true"}},
		{"ttl negative", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--ttl", "-1s", "n", "--", "true"}},
		{"negative wait", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--wait", "-1s", "n", "--", "true"}},
		{"zero connect timeout", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--connect-timeout", "0", "n", "--", "true"}},
		{"bad on-suspend", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--on-suspend", "pause", "n", "--", "true"}},
		{"bad URL", nil, []string{"run", "--backend", "etcd://", "n", "--", "true"}},
		{"URL without scheme", nil, []string{"run", "--backend", "127.0.0.1:2379", "n", "--", "true"}},
		{"bad URL in env", []string{"BATON_BACKEND=etcd://h:99999"}, []string{"run", "n", "--", "true"}},
		{"unknown scheme", nil, []string{"run", "--backend", "consul://127.0.0.1:8500", "n", "--", "true"}},
		{"engine of a later release", nil, []string{"run", "--backend", "redlock://127.0.0.1:6379/0", "n", "--", "true"}},
		{"empty --backend", nil, []string{"run", "--backend", "", "n", "--", "true"}},
		{"sqlite URL with parameters", nil, []string{"run", "--backend", "sqlite:///tmp/x.db?mode=ro", "n", "--", "true"}},
		{"mysql unknown parameter", nil, []string{"run", "--backend", "mysql://u@127.0.0.1:1/db?parseTime=false", "n", "--", "true"}},
		{"mysql bad tls", nil, []string{"run", "--backend", "mysql://u@127.0.0.1:1/db?tls=maybe", "n", "--", "true"}},
		{"read and write on SQL", nil, []string{"run", "--backend", "postgres://127.0.0.1:1/db", "--read", "--write", "n", "--", "true"}},
		{"shared zero on SQL", nil, []string{"run", "--backend", "mysql://u@127.0.0.1:1/db", "--shared", "0", "n", "--", "true"}},
		{"elect with --write on the embedded default", nil, []string{"elect", "--write", "n", "--", "true"}},
		{"ttl below the SQL minimum", nil, []string{"run", "--backend", "sqlite:///nonexistent/x.db", "--ttl", "100ms", "n", "--", "true"}},
		{"clean on SQL", nil, []string{"clean", "--backend", "mysql://u@127.0.0.1:1/db", "n"}},
		{"invalid name", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "a/../b", "--", "true"}},
		{"empty name", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "//", "--", "true"}},
		{"missing name", nil, []string{"run", "--backend", "etcd://127.0.0.1:1"}},
		{"missing command", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "n", "--"}},
		{"missing --", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "n", "true"}},
		{"read and write", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--read", "--write", "n", "--", "true"}},
		{"read and shared", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--read", "--shared", "2", "n", "--", "true"}},
		{"write and shared", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--shared", "2", "--write", "n", "--", "true"}},
		{"shared zero", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--shared", "0", "n", "--", "true"}},
		{"shared negative", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--shared", "-2", "n", "--", "true"}},
		{"shared not a number", nil, []string{"run", "--backend", "etcd://127.0.0.1:1", "--shared", "two", "n", "--", "true"}},
		{"elect with --read", nil, []string{"elect", "--backend", "etcd://127.0.0.1:1", "--read", "n", "--", "true"}},
		{"elect missing command", nil, []string{"elect", "--backend", "etcd://127.0.0.1:1", "n", "--"}},
		{"inspect missing name", nil, []string{"inspect", "--backend", "etcd://127.0.0.1:1"}},
		{"inspect two names", nil, []string{"inspect", "--backend", "etcd://127.0.0.1:1", "a", "b"}},
		{"inspect invalid name", nil, []string{"inspect", "--backend", "etcd://127.0.0.1:1", "a/../b"}},
		{"clean unknown flag", nil, []string{"clean", "--backend", "etcd://127.0.0.1:1", "--all", "n"}},
		{"clean the directory", nil, []string{"clean", "--backend", "etcd://127.0.0.1:1", "--apply", "--force-release", "", "n"}},
		{"clean the directory by name", nil, []string{"clean", "--backend", "etcd://127.0.0.1:1", "--apply", "--force-release", "/n/", "n"}},
		{"demo with arguments", nil, []string{"demo", "extra"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runBaton(t, tt.env, tt.args...)
			if r.code != 64 {
				t.Errorf("baton %q exit = %d, want 64; stderr:\n%s", tt.args, r.code, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("baton %q wrote %q to stdout, want nothing (stderr only)", tt.args, r.stdout)
			}
			if r.stderr == "" {
				t.Errorf("baton %q printed no message", tt.args)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	r := runBaton(t, nil, "version")
	if r.code != 0 || r.stdout != "" || !strings.HasPrefix(r.stderr, "baton ") {
		t.Errorf("baton version = exit %d, stdout %q, stderr %q; want 0, empty, the version", r.code, r.stdout, r.stderr)
	}
	if r := runBaton(t, nil, "help", "run"); !strings.Contains(r.stdout, "BATON_TOKEN") || !strings.Contains(r.stdout, "76") {
		t.Errorf("baton help run does not document BATON_TOKEN and exit 76:\n%s", r.stdout)
	}
}

// TestUnreachable: no session within --connect-timeout exits 69, promptly.
func TestUnreachable(t *testing.T) {
	tests := []struct{ name, url string }{
		{"zk", "zk://127.0.0.1:1"},
		{"etcd", "etcd://127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A race-built binary takes about a second just to start on a
			// loaded host: bound the run by a start-up measured right now.
			startup := runBaton(t, nil, "version").took
			r := runBaton(t, nil, "run", "--backend", tt.url, "--connect-timeout", "500ms", "n", "--", "true")
			if r.code != 69 {
				t.Errorf("run on %s exit = %d, want 69; stderr:\n%s", tt.url, r.code, r.stderr)
			}
			if bound := startup + 500*time.Millisecond + time.Second; r.took > bound {
				t.Errorf("run on %s took %v with --connect-timeout 500ms (start-up %v), want ≤ %v", tt.url, r.took, startup, bound)
			}
		})
	}
}

// TestCredentialsNotPrinted: the password in a URL never reaches stderr.
func TestCredentialsNotPrinted(t *testing.T) {
	r := runBaton(t, nil, "run", "--backend", "etcd://alice:s3cr3t-pw@127.0.0.1:1", "--connect-timeout", "300ms", "n", "--", "true")
	if r.code != 69 && r.code != 77 {
		t.Errorf("run with credentials on a dead endpoint exit = %d, want 69 or 77; stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "s3cr3t-pw") {
		t.Errorf("stderr shows the password:\n%s", r.stderr)
	}
}

func TestCommandNotRunnable(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.txt")
	if err := os.WriteFile(plain, []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := etcdURL(t)
	tests := []struct {
		name    string
		command string
		want    int
	}{
		{"not found", "baton-no-such-command-xyz", 127},
		{"path not found", filepath.Join(dir, "missing"), 127},
		{"not executable", plain, 126},
		{"directory", dir, 126},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBaton(t, nil, "run", "--backend", url, lockName(t), "--", tt.command)
			if r.code != tt.want {
				t.Errorf("run %s exit = %d, want %d; stderr:\n%s", tt.command, r.code, tt.want, r.stderr)
			}
		})
	}
}

func TestChildStatus(t *testing.T) {
	url := etcdURL(t)
	tests := []struct {
		name   string
		script string
		want   int
	}{
		{"success", "exit 0", 0},
		{"exit 3", "exit 3", 3},
		{"killed by SIGTERM", "kill -TERM $$", 128 + int(syscall.SIGTERM)},
		{"killed by SIGKILL", "kill -KILL $$", 128 + int(syscall.SIGKILL)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBaton(t, nil, "run", "--backend", url, lockName(t), "--", "sh", "-c", tt.script)
			if r.code != tt.want {
				t.Errorf("run sh -c %q exit = %d, want %d; stderr:\n%s", tt.script, r.code, tt.want, r.stderr)
			}
		})
	}
}

// TestChildEnv: COMMAND sees BATON_LOCK (normalised), BATON_TOKEN and
// BATON_ENGINE, and BATON_BACKEND as inherited; COMMAND owns stdout.
func TestChildEnv(t *testing.T) {
	backends := []struct {
		engine string
		url    func(t *testing.T) string
	}{
		{"zk", func(t *testing.T) string { return "zk://" + testenv.ZK(t) + "/baton-cli-test" }},
		{"etcd", etcdURL},
	}
	for _, b := range backends {
		t.Run(b.engine, func(t *testing.T) {
			url := b.url(t)
			name := lockName(t)
			r := runBaton(t, []string{"BATON_BACKEND=" + url}, "run", "--ttl", "2s", "/"+name+"/", "--",
				"sh", "-c", `echo "$BATON_LOCK|$BATON_TOKEN|$BATON_ENGINE|$BATON_BACKEND"`)
			if r.code != 0 {
				t.Fatalf("run exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
			}
			f := strings.Split(strings.TrimSpace(r.stdout), "|")
			if len(f) != 4 {
				t.Fatalf("child printed %q, want 4 fields", r.stdout)
			}
			if f[0] != name {
				t.Errorf("BATON_LOCK = %q, want %q", f[0], name)
			}
			if tok, err := strconv.ParseUint(f[1], 10, 64); err != nil || tok == 0 {
				t.Errorf("BATON_TOKEN = %q, want a positive decimal (%v)", f[1], err)
			}
			if f[2] != b.engine {
				t.Errorf("BATON_ENGINE = %q, want %q", f[2], b.engine)
			}
			if f[3] != url {
				t.Errorf("BATON_BACKEND = %q, want %q (inherited)", f[3], url)
			}
		})
	}
}

// holdScript marks that it runs, then waits; on SIGTERM it exits with the
// given status.
func holdScript(mark string, termStatus int) string {
	return fmt.Sprintf(`trap 'exit %d' TERM; touch %q; while :; do sleep 0.05; done`, termStatus, mark)
}

// TestContention: while one run holds NAME, --wait 0 and --wait 300ms exit
// 75; SIGTERM to the holder's baton reaches COMMAND, baton exits with
// COMMAND's status and releases, so the next run acquires at once.
func TestContention(t *testing.T) {
	url := etcdURL(t)
	name := lockName(t)
	mark := filepath.Join(t.TempDir(), "running")
	holder := startBaton(t, nil, "run", "--backend", url, "--ttl", "2", name, "--", "sh", "-c", holdScript(mark, 7))
	waitFile(t, mark, 10*time.Second)

	if r := runBaton(t, nil, "run", "--backend", url, "--wait", "0", name, "--", "true"); r.code != 75 {
		t.Errorf("second run --wait 0 exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
	}
	r := runBaton(t, nil, "run", "--backend", url, "--wait", "300ms", name, "--", "true")
	if r.code != 75 {
		t.Errorf("second run --wait 300ms exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
	}
	if r.took < 300*time.Millisecond || r.took > 3*time.Second {
		t.Errorf("second run --wait 300ms took %v, want about 300ms", r.took)
	}

	if err := holder.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	hr := holder.wait(t, 10*time.Second)
	if hr.code != 7 {
		t.Errorf("holder after SIGTERM exit = %d, want 7 (COMMAND's status); stderr:\n%s", hr.code, hr.stderr)
	}
	r = runBaton(t, nil, "run", "--backend", url, "--wait", "0", name, "--", "true")
	if r.code != 0 {
		t.Errorf("run after the holder exited: exit = %d, want 0 (released); stderr:\n%s", r.code, r.stderr)
	}
}

// TestContentionZK: the same exclusion on ZooKeeper, including SIGINT.
func TestContentionZK(t *testing.T) {
	url := "zk://" + testenv.ZK(t) + "/baton-cli-test"
	name := lockName(t)
	mark := filepath.Join(t.TempDir(), "running")
	holder := startBaton(t, nil, "run", "--backend", url, "--ttl", "2s", name, "--", "sh", "-c",
		fmt.Sprintf(`trap 'exit 5' INT; touch %q; while :; do sleep 0.05; done`, mark))
	waitFile(t, mark, 10*time.Second)
	if r := runBaton(t, nil, "run", "--backend", url, "--wait", "0", name, "--", "true"); r.code != 75 {
		t.Errorf("second run --wait 0 exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
	}
	if err := holder.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if hr := holder.wait(t, 10*time.Second); hr.code != 5 {
		t.Errorf("holder after SIGINT exit = %d, want 5; stderr:\n%s", hr.code, hr.stderr)
	}
	if r := runBaton(t, nil, "run", "--backend", url, "--wait", "0", name, "--", "true"); r.code != 0 {
		t.Errorf("run after release: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
}

// TestSignalWhileWaiting: SIGTERM to a waiting baton ends it with 128+15,
// and it never runs COMMAND.
func TestSignalWhileWaiting(t *testing.T) {
	url := etcdURL(t)
	name := lockName(t)
	dir := t.TempDir()
	mark := filepath.Join(dir, "running")
	startBaton(t, nil, "run", "--backend", url, "--ttl", "2", name, "--", "sh", "-c", holdScript(mark, 0))
	waitFile(t, mark, 10*time.Second)
	ran := filepath.Join(dir, "waiter-ran")
	w := startBaton(t, nil, "run", "--backend", url, name, "--", "touch", ran)
	waitEntries(t, name, 2)
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := w.wait(t, 5*time.Second)
	if r.code != 128+int(syscall.SIGTERM) {
		t.Errorf("waiting run after SIGTERM exit = %d, want %d; stderr:\n%s", r.code, 128+int(syscall.SIGTERM), r.stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the interrupted waiter ran its COMMAND")
	}
}

// TestLoss: the etcd link of a holder goes silent; the lease is lost, the
// command gets SIGTERM (or SIGKILL after --grace) and baton exits 76 even
// when the command then exits 0.
func TestLoss(t *testing.T) {
	etcdURL(t)
	tests := []struct {
		name   string
		script func(mark string) string
	}{
		{"command exits 0 on SIGTERM", func(mark string) string { return holdScript(mark, 0) }},
		{"command ignores SIGTERM", func(mark string) string {
			return fmt.Sprintf(`trap '' TERM; touch %q; while :; do sleep 0.05; done`, mark)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			px, err := faultproxy.Start(etcdSrv.Endpoint)
			if err != nil {
				t.Fatalf("faultproxy.Start() = %v", err)
			}
			t.Cleanup(px.Close)
			mark := filepath.Join(t.TempDir(), "running")
			p := startBaton(t, nil, "run", "--backend", "etcd://"+px.Addr, "--ttl", "2", "--grace", "500ms",
				lockName(t), "--", "sh", "-c", tt.script(mark))
			waitFile(t, mark, 10*time.Second)
			if err := px.Blackhole(""); err != nil {
				t.Fatalf("Blackhole() = %v", err)
			}
			cut := time.Now()
			r := p.wait(t, 15*time.Second)
			if r.code != 76 {
				t.Errorf("run after the link went silent: exit = %d, want 76; stderr:\n%s", r.code, r.stderr)
			}
			if d := time.Since(cut); d > 8*time.Second {
				t.Errorf("baton took %v after the cut to exit, want within TTL + grace + release", d)
			}
			if !strings.Contains(r.stderr, "lost") {
				t.Errorf("stderr does not report the loss:\n%s", r.stderr)
			}
		})
	}
}

// TestDemo: the demo tells the story and checks it.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, batonBin, "demo")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if err != nil {
		t.Fatalf("baton demo = %v after %v; stderr:\n%s", err, time.Since(start), stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("baton demo wrote %q to stdout, want nothing", stdout.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "rejected") || !strings.Contains(last, "token") {
		t.Errorf("last line of baton demo = %q, want the rejected write and its tokens", last)
	}
}

// procState returns the state letter of pid from /proc (T when stopped).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// TestSuspendStop: with --on-suspend=stop, COMMAND is stopped while the
// ZooKeeper link is silent and continued when the session comes back.
func TestSuspendStop(t *testing.T) {
	zkAddr := testenv.ZK(t)
	px, err := faultproxy.Start(zkAddr)
	if err != nil {
		t.Fatalf("faultproxy.Start() = %v", err)
	}
	t.Cleanup(px.Close)
	mark := filepath.Join(t.TempDir(), "pid")
	p := startBaton(t, nil, "run", "--backend", "zk://"+px.Addr+"/baton-cli-test", "--ttl", "6s", "--on-suspend", "stop",
		lockName(t), "--", "sh", "-c", fmt.Sprintf(`trap 'exit 0' TERM; echo $$ > %q.tmp; mv %q.tmp %q; while :; do sleep 0.05; done`, mark, mark, mark))
	waitFile(t, mark, 10*time.Second)
	b, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("child pid %q: %v", b, err)
	}
	waitState := func(want func(string) bool, what string) {
		t.Helper()
		deadline := time.Now().Add(6 * time.Second)
		for !want(procState(pid)) {
			if time.Now().After(deadline) {
				t.Fatalf("COMMAND (pid %d) state %q, want %s within 6s", pid, procState(pid), what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := px.Blackhole(""); err != nil {
		t.Fatalf("Blackhole() = %v", err)
	}
	waitState(func(s string) bool { return s == "T" }, "stopped (T)")
	px.Heal()
	waitState(func(s string) bool { return s != "T" && s != "" }, "running again")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := p.wait(t, 10*time.Second)
	if r.code != 0 {
		t.Errorf("run after suspend and resume, then SIGTERM: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "suspended") || !strings.Contains(r.stderr, "held again") {
		t.Errorf("stderr does not note the suspension and the recovery:\n%s", r.stderr)
	}
}

// TestDiesWithBaton: COMMAND does not outlive a SIGKILLed baton (it would
// run on without anyone holding the lock for it).
func TestDiesWithBaton(t *testing.T) {
	url := etcdURL(t)
	mark := filepath.Join(t.TempDir(), "pid")
	p := startBaton(t, nil, "run", "--backend", url, "--ttl", "2", lockName(t), "--", "sh", "-c",
		fmt.Sprintf(`echo $$ > %q.tmp; mv %q.tmp %q; while :; do sleep 0.05; done`, mark, mark, mark))
	waitFile(t, mark, 10*time.Second)
	b, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("child pid %q: %v", b, err)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 5*time.Second)
	deadline := time.Now().Add(3 * time.Second)
	for {
		st := procState(pid)
		if st == "" || st == "Z" { // gone, or dead and waiting for init to reap it
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("COMMAND (pid %d) still running (state %q) 3s after baton was SIGKILLed", pid, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
