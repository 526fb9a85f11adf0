package main_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	_ "github.com/go-sql-driver/mysql"

	"github.com/baton-go/baton/batontest/testenv"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// drillReport is `baton drill --json`.
type drillReport struct {
	Engine    string `json:"engine"`
	Seed      uint64 `json:"seed"`
	Prefix    string `json:"prefix"`
	Passed    bool   `json:"passed"`
	Scenarios []struct {
		Name                  string `json:"name"`
		Engine                string `json:"engine"`
		Trials                int    `json:"trials"`
		Skipped               string `json:"skipped"`
		FencedStaleAccepted   int    `json:"fenced_stale_accepted"`
		UnfencedStaleAccepted int    `json:"unfenced_stale_accepted"`
		NextGrantMS           *struct {
			P50 int64 `json:"p50"`
			Max int64 `json:"max"`
		} `json:"next_grant_ms"`
		LostLeadMS *struct {
			Min int64 `json:"min"`
		} `json:"lost_lead_ms"`
		Orphans    int      `json:"orphans"`
		Passed     bool     `json:"passed"`
		Violations []string `json:"violations"`
	} `json:"scenarios"`
}

func readDrillJSON(t *testing.T, path string) drillReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read --json file: %v", err)
	}
	var r drillReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("parse --json file: %v\n%s", err, b)
	}
	return r
}

// drillLimit bounds one `baton drill --trials 1` of every scenario: the
// faults wait out a few TTLs each, and the engines run side by side on a
// small CI host.
const drillLimit = 4 * time.Minute

// TestDrillEngines runs every scenario once on every engine of the test
// setup and on the embedded default: the fenced resource accepts no stale
// write, the unfenced twin accepts the paused holder's, nothing is left
// on the servers, and baton exits 0.
func TestDrillEngines(t *testing.T) {
	tests := []struct {
		engine string
		url    func(t *testing.T) (url string, env []string)
	}{
		{"zk", func(t *testing.T) (string, []string) { return "zk://" + testenv.ZK(t) + "/baton-cli-drill", nil }},
		{"etcd", func(t *testing.T) (string, []string) { return "etcd://" + testenv.Etcd(t), nil }},
		{"redis", func(t *testing.T) (string, []string) { return "redis://" + testenv.Redis(t), nil }},
		{"redlock", func(t *testing.T) (string, []string) { return redlockURL(t), nil }},
		{"postgres", func(t *testing.T) (string, []string) { return testenv.Postgres(t), nil }},
		{"mysql", func(t *testing.T) (string, []string) { return mysqlURL(t), nil }},
		{"sqlite", func(t *testing.T) (string, []string) {
			return "", []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()} // the embedded default
		}},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			t.Parallel()
			u, env := tt.url(t)
			out := filepath.Join(t.TempDir(), "drill.json")
			// A TTL of 2s and a herd of 8: the engines drill side by side,
			// under -race, on a host of two cores; a shorter TTL lets a
			// starved keeper miss its renewals.
			args := []string{"drill", "--trials", "1", "--ttl", "2s", "--herd", "8", "--json", out}
			if u != "" {
				args = append(args, "--backend", u)
			}
			r := startBaton(t, env, args...).wait(t, drillLimit)
			if r.code != 0 {
				t.Fatalf("baton drill on %s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", tt.engine, r.code, r.stdout, r.stderr)
			}
			t.Logf("baton drill on %s (%v):\n%s", tt.engine, r.took.Round(time.Second), r.stdout)
			rep := readDrillJSON(t, out)
			if rep.Engine != tt.engine || !rep.Passed || len(rep.Scenarios) == 0 {
				t.Fatalf("report: engine %q passed %v, %d scenarios; want %s, true, some", rep.Engine, rep.Passed, len(rep.Scenarios), tt.engine)
			}
			ran := 0
			for _, s := range rep.Scenarios {
				if s.Skipped != "" {
					continue
				}
				ran++
				if s.FencedStaleAccepted != 0 || s.Orphans != 0 || !s.Passed || s.Trials != 1 || s.Engine != tt.engine {
					t.Errorf("%s: fenced_stale_accepted %d, orphans %d, passed %v, trials %d, engine %q; want 0, 0, true, 1, %q (violations %q)",
						s.Name, s.FencedStaleAccepted, s.Orphans, s.Passed, s.Trials, s.Engine, tt.engine, s.Violations)
				}
				if s.Name == "paused" && s.UnfencedStaleAccepted == 0 {
					t.Errorf("paused: the unfenced twin accepted no stale write: the drill could not have failed")
				}
				if !strings.Contains(r.stdout, s.Name) {
					t.Errorf("the summary table has no row for %s", s.Name)
				}
			}
			if ran == 0 {
				t.Errorf("every scenario was skipped")
			}
		})
	}
}

// TestDrillUsage: bad flags and unknown scenarios exit 64 before anything
// connects.
func TestDrillUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--bogus"},
		{"--scenarios", "paused,nope"},
		{"--trials", "0"},
		{"--trials", "many"},
		{"--herd", "0"},
		{"--herd", "65"},
		{"--herd", "99999999999"},
		{"--seed", "-1"},
		{"--ttl", "0"},
		{"--ttl", "100ms", "--backend", "sqlite:///nonexistent/x.db"},
		{"--prefix", "a/../b"},
		{"--prefix", "/"},
		{"--backend", "consul://127.0.0.1:8500"},
		{"extra"},
	} {
		// Without --backend: the URL below, never the user's state directory.
		r := runBaton(t, []string{"BATON_BACKEND=etcd://127.0.0.1:1"}, append([]string{"drill"}, args...)...)
		if r.code != 64 || r.stdout != "" || r.stderr == "" {
			t.Errorf("baton drill %q: exit %d, stdout %q; want 64, nothing, a message on stderr:\n%s", args, r.code, r.stdout, r.stderr)
		}
	}
	for _, args := range [][]string{{"help", "drill"}, {"drill", "--help"}, {"drill", "--trials", "2", "--help"}} {
		r := runBaton(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "--scenarios") || !strings.Contains(r.stdout, "paused") {
			t.Errorf("baton %q: exit %d; want 0 and the drill's flags and scenarios on stdout:\n%s", args, r.code, r.stdout)
		}
	}
}

// TestDrillOutputFiles: a --json or --html FILE that cannot be created,
// or a --keep-dir that is a file, exits 64, naming it, before the drill
// connects (the backend here is a
// closed port: connecting first would exit 69), not after the drill ran.
func TestDrillOutputFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-dir", "drill.json")
	same := filepath.Join(dir, "drill.out")
	for _, tc := range []struct {
		args []string
		path string
	}{
		{[]string{"--json", missing}, missing},
		{[]string{"--html", dir}, dir},
		{[]string{"--json", same, "--html", same}, same},
		{[]string{"--keep-dir", "/etc/passwd"}, "/etc/passwd"},
	} {
		r := runBaton(t, []string{"BATON_BACKEND=etcd://127.0.0.1:1"}, append([]string{"drill"}, tc.args...)...)
		if r.code != 64 || !strings.Contains(r.stderr, strconv.Quote(tc.path)) {
			t.Errorf("baton drill %q: exit %d; want 64 and a message naming %q:\n%s", tc.args, r.code, tc.path, r.stderr)
		}
		if strings.Contains(r.stderr, "trial") {
			t.Errorf("baton drill %q ran trials before refusing its output file:\n%s", tc.args, r.stderr)
		}
	}
}

// TestDrillRefused: a closed port exits 69; a MariaDB user given the wrong
// password exits 77; the password is never printed.
func TestDrillRefused(t *testing.T) {
	my := mysqlURL(t)
	db, err := sql.Open("mysql", testenv.MySQL(t))
	if err != nil {
		t.Fatalf("sql.Open = %v", err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE USER IF NOT EXISTS 'baton_drill_pw'@'%' IDENTIFIED BY 'the-right-one'`,
		`GRANT ALL ON baton.* TO 'baton_drill_pw'@'%'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = db.Exec(`DROP USER IF EXISTS 'baton_drill_pw'@'%'`) })
	wrong, err := url.Parse(my)
	if err != nil {
		t.Fatalf("url.Parse(%q) = %v", my, err)
	}
	wrong.User = url.UserPassword("baton_drill_pw", "s3cr3t-wrong")
	tests := []struct {
		name, url string
		want      int
	}{
		{"etcd closed port", "etcd://127.0.0.1:1", 69},
		{"postgres closed port", "postgres://127.0.0.1:1/baton?sslmode=disable", 69},
		{"mysql wrong password", wrong.String(), 77},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runBaton(t, nil, "drill", "--backend", tt.url, "--connect-timeout", "1s", "--trials", "1")
			if r.code != tt.want {
				t.Errorf("baton drill exit = %d, want %d; stderr:\n%s", r.code, tt.want, r.stderr)
			}
			if strings.Contains(r.stderr+r.stdout, "s3cr3t") {
				t.Errorf("the output shows the password:\n%s", r.stderr)
			}
		})
	}
}

// prefixLine is the start line of a drill, which names its prefix.
var prefixLine = regexp.MustCompile(`names under (\S+)/\n`)

// TestDrillInterrupt: SIGINT during a drill ends it promptly with 130,
// and nothing is left on the server under its prefix. The trial it cut
// short is reported as interrupted, with no verdict: no FAILED, no
// violation, no failing history, passed in --json with its index.
func TestDrillInterrupt(t *testing.T) {
	t.Parallel()
	endpoint := testenv.Etcd(t)
	var stderr syncBuffer
	out := filepath.Join(t.TempDir(), "drill.json")
	p := startBatonWith(t, func(c *exec.Cmd) { c.Stderr = &stderr }, nil,
		"drill", "--backend", "etcd://"+endpoint, "--ttl", "1s", "--trials", "3", "--scenarios", "paused,herd", "--json", out)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), "trial 1/3") {
		select {
		case <-p.done:
			t.Fatalf("baton drill ended before its first trial did: exit %d\n%s", p.res.code, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no trial ended within a minute:\n%s", stderr.String())
		}
	}
	m := prefixLine.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("the drill did not print its prefix:\n%s", stderr.String())
	}
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("SIGINT: %v", err)
	}
	r := p.wait(t, 30*time.Second)
	if r.code != 130 {
		t.Errorf("exit after SIGINT = %d, want 130; stderr:\n%s", r.code, stderr.String())
	}
	if took := time.Since(sent); took > 15*time.Second {
		t.Errorf("the drill took %v to end after SIGINT", took)
	}
	checkInterrupted(t, r, stderr.String(), out)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("clientv3.New() = %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, m[1], clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatalf("Get(%q, prefix) = %v", m[1], err)
	}
	for _, kv := range resp.Kvs {
		t.Errorf("left behind after SIGINT: %s", kv.Key)
	}
}

// checkInterrupted wants the second trial of paused, cut short by SIGINT,
// reported as interrupted and not as a broken invariant.
func checkInterrupted(t *testing.T, r result, stderr, out string) {
	t.Helper()
	for _, bad := range []string{"FAILED", "broke", "failing history", "interrupted: context canceled"} {
		if strings.Contains(stderr+r.stdout, bad) {
			t.Errorf("after SIGINT the output says %q: the cut trial has no verdict\nstdout:\n%s\nstderr:\n%s", bad, r.stdout, stderr)
		}
	}
	if !strings.Contains(stderr, "paused: trial 2/3 interrupted") || !regexp.MustCompile(`paused .* interrupted\n`).MatchString(r.stdout) {
		t.Errorf("want the cut trial reported as interrupted on stderr and in the table\nstdout:\n%s\nstderr:\n%s", r.stdout, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("read --json file: %v", err)
	}
	var rep struct {
		Passed      bool `json:"passed"`
		Interrupted bool `json:"interrupted"`
		Scenarios   []struct {
			Name             string   `json:"name"`
			Passed           bool     `json:"passed"`
			Violations       []string `json:"violations"`
			InterruptedTrial *int     `json:"interrupted_trial"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("parse --json file: %v\n%s", err, b)
	}
	if !rep.Passed || !rep.Interrupted || len(rep.Scenarios) != 1 {
		t.Fatalf("--json: passed %v, interrupted %v, %d scenarios; want true, true, 1 (paused)\n%s", rep.Passed, rep.Interrupted, len(rep.Scenarios), b)
	}
	s := rep.Scenarios[0]
	if s.Name != "paused" || !s.Passed || len(s.Violations) != 0 || s.InterruptedTrial == nil || *s.InterruptedTrial != 1 {
		t.Errorf("--json paused: passed %v, violations %q, interrupted_trial %v; want true, none, 1\n%s", s.Passed, s.Violations, s.InterruptedTrial, b)
	}
}

// syncBuffer is an output of a process that the test reads while the
// process still writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDrillHTML opens the --html report of a real drill in headless
// chromium: the summary table has the --json report's rows and figures,
// every trial that ran has a timeline with its clients' lanes and marks,
// and the page logs no error.
func TestDrillHTML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	page, out := filepath.Join(dir, "drill.html"), filepath.Join(dir, "drill.json")
	r := startBaton(t, nil, "drill", "--backend", "etcd://"+testenv.Etcd(t), "--ttl", "1s", "--trials", "1",
		"--scenarios", "paused,killed,cut", "--html", page, "--json", out).wait(t, drillLimit)
	if r.code != 0 {
		t.Fatalf("baton drill: exit %d, want 0\n%s", r.code, r.stderr)
	}
	rep := readDrillJSON(t, out)
	ctx, console := browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1100, 900), chromedp.Navigate("file://"+page)); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	eval := func(expr string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return n
	}
	for _, s := range rep.Scenarios {
		sel := `section.scenario[data-scenario="` + s.Name + `"]`
		timelines := eval(`document.querySelectorAll('` + sel + ` svg.timeline').length`)
		if s.Skipped != "" {
			if timelines != 0 {
				t.Errorf("%s was skipped but has %d timelines", s.Name, timelines)
			}
			continue
		}
		unfenced := eval(`+document.querySelector('#summary tr[data-scenario="` + s.Name + `"] td:nth-child(4)').textContent`)
		if unfenced != s.UnfencedStaleAccepted {
			t.Errorf("%s: the table shows %d unfenced stale writes, the JSON %d", s.Name, unfenced, s.UnfencedStaleAccepted)
		}
		if timelines != s.Trials {
			t.Errorf("%s: %d timelines, want one per trial (%d)", s.Name, timelines, s.Trials)
		}
		lanes := eval(`Math.min(...[...document.querySelectorAll('` + sel + ` svg.timeline')].map((s) => s.querySelectorAll('g.lane').length))`)
		marks := eval(`Math.min(...[...document.querySelectorAll('` + sel + ` svg.timeline')].map((s) => s.querySelectorAll('g.mark').length))`)
		drawn := eval(`[...document.querySelectorAll('` + sel + ` svg.timeline rect.span')].filter((r) => r.getBBox().width > 0).length`)
		if lanes < 2 || marks < 1 || drawn < 1 {
			t.Errorf("%s: a timeline has %d lanes, %d marks, %d spans drawn; want ≥ 2, ≥ 1, ≥ 1", s.Name, lanes, marks, drawn)
		}
	}
	finishPage(ctx, t, console, "drill-report.png")
}

// TestDrillTerminal: on a terminal the progress is one line rewritten in
// place; in a log (the other tests' pipes) it is a line per trial.
func TestDrillTerminal(t *testing.T) {
	t.Parallel()
	master, slave := openPTY(t)
	var screen syncBuffer
	drained := make(chan struct{})
	go func() { // owned by the test: ends when the pty closes
		defer close(drained)
		_, _ = io.Copy(&screen, master)
	}()
	env := []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	p := startBatonWith(t, func(c *exec.Cmd) { c.Stderr = slave }, env, "drill", "--trials", "2", "--ttl", "2s", "--scenarios", "paused")
	r := p.wait(t, drillLimit)
	slave.Close()
	master.Close()
	<-drained
	out := screen.String()
	if r.code != 0 {
		t.Fatalf("baton drill: exit %d, want 0\n%q", r.code, out)
	}
	if !strings.Contains(out, "\r\033[K") || strings.Contains(out, "baton: drill: paused: trial") {
		t.Errorf("terminal progress: want lines rewritten in place, no log lines:\n%q", out)
	}
	if !strings.Contains(r.stdout, "paused") {
		t.Errorf("the summary table is not on stdout:\n%s", r.stdout)
	}
}
