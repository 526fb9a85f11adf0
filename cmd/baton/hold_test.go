package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
)

// TestHoldFlagsParse: bad log and hold flags exit 64 with a message that
// names the flag, before anything connects.
func TestHoldFlagsParse(t *testing.T) {
	tests := []struct {
		name, flag string
		args       []string
	}{
		{"bad log format", "--log-format", []string{"--log-format", "yaml"}},
		{"bad log level", "--log-level", []string{"--log-level", "verbose"}},
		{"log level offset", "--log-level", []string{"--log-level", "info+2"}},
		{"zero min-hold", "--min-hold", []string{"--min-hold", "0"}},
		{"negative max-hold", "--max-hold", []string{"--max-hold", "-1s"}},
		{"min-hold over max-hold", "--min-hold", []string{"--min-hold", "2m", "--max-hold", "1m"}},
		{"min-hold over the cap", "--min-hold", []string{"--min-hold", "25h"}},
		{"bad min-hold duration", "min-hold", []string{"--min-hold", "soon"}},
	}
	for _, tt := range tests {
		for _, cmd := range []string{"run", "elect"} {
			t.Run(cmd+" "+tt.name, func(t *testing.T) {
				t.Parallel()
				args := append(append([]string{cmd, "--backend", "etcd://127.0.0.1:1"}, tt.args...), "n", "--", "true")
				r := runBaton(t, nil, args...)
				if r.code != 64 || !strings.Contains(r.stderr, tt.flag) {
					t.Errorf("baton %q = exit %d, stderr %q; want 64 naming %s", args, r.code, r.stderr, tt.flag)
				}
			})
		}
	}
}

// records decodes every line of stderr as one JSON log record.
func records(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("stderr line %q is not JSON: %v\nstderr:\n%s", line, err, stderr)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("record %q has no %q", line, k)
			}
		}
		out = append(out, rec)
	}
	return out
}

// find returns the first record whose msg is msg, failing without one.
func find(t *testing.T, recs []map[string]any, msg string) map[string]any {
	t.Helper()
	for _, r := range recs {
		if r["msg"] == msg {
			return r
		}
	}
	t.Fatalf("no %q record among %v", msg, recs)
	return nil
}

// checkLifecycle asserts the run's records in order: acquired with a
// token, command started, command exited 0, released.
func checkLifecycle(t *testing.T, recs []map[string]any, name string) {
	t.Helper()
	acq := find(t, recs, "acquired")
	if tok, _ := acq["token"].(float64); tok <= 0 || acq["lock"] != name {
		t.Errorf("acquired record %v: want a positive token and lock %q", acq, name)
	}
	if ex := find(t, recs, "command exited"); ex["status"] != 0.0 || ex["exit"] != 0.0 {
		t.Errorf("command exited record %v: want status 0, exit 0", ex)
	}
	if rel := find(t, recs, "released"); rel["token"] != acq["token"] {
		t.Errorf("released record %v: want the acquired token %v", rel, acq["token"])
	}
	var order []string
	for _, r := range recs {
		switch m := r["msg"].(string); m {
		case "acquired", "command started", "command exited", "released":
			order = append(order, m)
		}
	}
	if got := strings.Join(order, ","); got != "acquired,command started,command exited,released" {
		t.Errorf("lifecycle records in order %s", got)
	}
}

// TestLogJSONSQLite: on the embedded default, --log-format json
// --log-level debug writes only JSON records, telling the lifecycle.
func TestLogJSONSQLite(t *testing.T) {
	t.Parallel()
	env := []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	name := lockName(t)
	r := runBaton(t, env, "run", "--log-format", "json", "--log-level", "debug", name, "--", "true")
	if r.code != 0 {
		t.Fatalf("run exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	recs := records(t, r.stderr)
	checkLifecycle(t, recs, name)
	if b, _ := find(t, recs, "acquired")["backend"].(string); !strings.HasPrefix(b, "sqlite://") {
		t.Errorf("acquired backend = %q, want the embedded sqlite:// URL", b)
	}
}

// TestLogJSONZK: on ZooKeeper with a password in the URL, the records
// carry the engine's own events too (the grant, the release), and the
// password appears nowhere; the backend is logged redacted.
//
// It has a chroot of its own: its digest identity owns the ACL of every
// container it creates, and the other tests, unauthenticated, could not
// create entries under a container it made in their chroot (they failed
// with exit 77 when this test ran first).
func TestLogJSONZK(t *testing.T) {
	t.Parallel()
	url := "zk://baton-log:s3cr3t-pw@" + testenv.ZK(t) + "/baton-cli-test-auth"
	name := lockName(t)
	r := runBaton(t, nil, "run", "--backend", url, "--log-format", "json", "--log-level", "debug", name, "--", "true")
	if r.code != 0 {
		t.Fatalf("run exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "s3cr3t-pw") {
		t.Errorf("stderr shows the password:\n%s", r.stderr)
	}
	recs := records(t, r.stderr)
	checkLifecycle(t, recs, name)
	if b, _ := find(t, recs, "acquired")["backend"].(string); !strings.Contains(b, "baton-log:***@") {
		t.Errorf("acquired backend = %q, want it redacted", b)
	}
	for _, ev := range []string{"acquire_started", "granted", "released"} {
		if rec := find(t, recs, "baton "+ev); rec["engine"] != "zk" {
			t.Errorf("engine event %v: want engine zk", rec)
		}
	}
	// The default level (warn) says nothing of a run that went well (the
	// password comes from the environment: on the command line it is
	// warned about).
	r = runBaton(t, []string{"BATON_BACKEND=" + url}, "run", "--log-format", "json", name, "--", "true")
	if r.code != 0 || r.stderr != "" {
		t.Errorf("run at the default level = exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
	}
}

// TestMinHoldQuietBusy: two runs of a scheduled job started together with
// --min-hold 2s --wait 0 --quiet-busy: exactly one runs COMMAND and exits
// 0, no sooner than 2s after it started; the other exits 75 without a
// word on stderr.
func TestMinHoldQuietBusy(t *testing.T) {
	t.Parallel()
	env := []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	name, dir := lockName(t), t.TempDir()
	ran := filepath.Join(dir, "ran")
	job := `echo "$$" >> ` + ran
	var procs [2]*proc
	for i := range procs {
		procs[i] = startBaton(t, env, "run", "--min-hold", "2s", "--wait", "0", "--quiet-busy", name, "--", "sh", "-c", job)
	}
	var winners, busy int
	for _, p := range procs {
		r := p.wait(t, 30*time.Second)
		switch r.code {
		case 0:
			winners++
			if r.took < 2*time.Second {
				t.Errorf("the job's run exited after %v, want ≥ 2s (--min-hold)", r.took)
			}
		case 75:
			busy++
			if r.stderr != "" {
				t.Errorf("busy run with --quiet-busy wrote %q, want nothing", r.stderr)
			}
		default:
			t.Errorf("run exit = %d, want 0 or 75; stderr:\n%s", r.code, r.stderr)
		}
	}
	if winners != 1 || busy != 1 {
		t.Errorf("%d runs exited 0 and %d exited 75, want one each", winners, busy)
	}
	out, err := os.ReadFile(ran)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(out))); n != 1 {
		t.Errorf("the job ran %d times, want once", n)
	}
	// Without --quiet-busy the busy run says why it exits 75.
	mark := filepath.Join(dir, "holding")
	holder := startBaton(t, env, "run", "--min-hold", "5s", name, "--", "touch", mark)
	holder.waitFile(t, mark, 15*time.Second)
	if r := runBaton(t, env, "run", "--wait", "0", name, "--", "true"); r.code != 75 || r.stderr == "" {
		t.Errorf("busy run without --quiet-busy = exit %d, stderr %q; want 75 and a message", r.code, r.stderr)
	}
	if r := holder.wait(t, 30*time.Second); r.code != 0 {
		t.Errorf("holder exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
}

// TestMaxHold: --max-hold 1s ends a sleeping COMMAND with SIGTERM about
// 1s after it started and exits 124; a COMMAND that ignores SIGTERM gets
// SIGKILL after --grace.
func TestMaxHold(t *testing.T) {
	t.Parallel()
	env := []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	startup := runBaton(t, env, "version").took
	name := lockName(t)
	r := runBaton(t, env, "run", "--max-hold", "1s", name, "--", "sleep", "30")
	if r.code != 124 {
		t.Errorf("--max-hold 1s -- sleep 30: exit %d, want 124; stderr:\n%s", r.code, r.stderr)
	}
	if lo, hi := time.Second, startup+4*time.Second; r.took < lo || r.took > hi {
		t.Errorf("--max-hold 1s -- sleep 30 took %v, want %v…%v", r.took, lo, hi)
	}
	if !strings.Contains(r.stderr, "--max-hold") || strings.Contains(r.stderr, ": SIGKILL") {
		t.Errorf("stderr should tell of the --max-hold SIGTERM and no SIGKILL:\n%s", r.stderr)
	}

	dir := t.TempDir()
	mark := filepath.Join(dir, "trapped")
	stubborn := `trap '' TERM; touch ` + mark + `; while :; do sleep 0.05; done`
	r = runBaton(t, env, "run", "--max-hold", "1s", "--grace", "1s", name, "--", "sh", "-c", stubborn)
	if r.code != 124 {
		t.Errorf("--max-hold on a COMMAND ignoring SIGTERM: exit %d, want 124; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the stubborn COMMAND never ran: %v", err)
	}
	if lo, hi := 2*time.Second, startup+6*time.Second; r.took < lo || r.took > hi {
		t.Errorf("--max-hold 1s --grace 1s on a stubborn COMMAND took %v, want %v…%v", r.took, lo, hi)
	}
	if !strings.Contains(r.stderr, "after SIGTERM: SIGKILL") {
		t.Errorf("stderr does not tell of the SIGKILL:\n%s", r.stderr)
	}
	// The lock was released: the next run takes it at once.
	if r := runBaton(t, env, "run", "--wait", "0", name, "--", "true"); r.code != 0 {
		t.Errorf("run after --max-hold ended the holder: exit %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
}

// TestLogLevelInfoZK: at --log-level info a leadership change is news (the
// election's grant and resignation are INFO records) while a mutex grant
// that did not wait is not; no DEBUG record appears.
func TestLogLevelInfoZK(t *testing.T) {
	t.Parallel()
	url := "zk://" + testenv.ZK(t) + "/baton-cli-test"
	name := lockName(t)
	r := runBaton(t, nil, "elect", "--backend", url, "--log-format", "json", "--log-level", "info", name, "--", "true")
	if r.code != 0 {
		t.Fatalf("elect exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	recs := records(t, r.stderr)
	checkLifecycle(t, recs, name)
	for _, ev := range []string{"granted", "released"} {
		if rec := find(t, recs, "baton "+ev); rec["level"] != "INFO" || rec["recipe"] != "election" {
			t.Errorf("election %s record %v: want INFO, recipe election", ev, rec)
		}
	}
	r = runBaton(t, nil, "run", "--backend", url, "--log-format", "json", "--log-level", "info", name+"-m", "--", "true")
	if r.code != 0 {
		t.Fatalf("run exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	recs = records(t, r.stderr)
	checkLifecycle(t, recs, name+"-m")
	for _, rec := range recs {
		if rec["level"] == "DEBUG" || rec["msg"] == "baton granted" {
			t.Errorf("record %v at --log-level info: a grant without a wait is debug", rec)
		}
	}
}

// TestLogGrantAfterWaitZK: a grant that had to wait for a holder (here
// one kept by --min-hold) is an INFO record, with its wait.
func TestLogGrantAfterWaitZK(t *testing.T) {
	t.Parallel()
	url := "zk://" + testenv.ZK(t) + "/baton-cli-test"
	name, mark := lockName(t), filepath.Join(t.TempDir(), "holding")
	holder := startBaton(t, nil, "run", "--backend", url, "--min-hold", "1500ms", name, "--", "touch", mark)
	holder.waitFile(t, mark, 15*time.Second)
	r := runBaton(t, nil, "run", "--backend", url, "--wait", "20s", "--log-format", "json", "--log-level", "info", name, "--", "true")
	if r.code != 0 {
		t.Fatalf("waiting run exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	recs := records(t, r.stderr)
	checkLifecycle(t, recs, name)
	g := find(t, recs, "baton granted")
	if w, _ := g["wait_ms"].(float64); g["level"] != "INFO" || w <= 0 {
		t.Errorf("grant after a wait %v: want INFO with wait_ms", g)
	}
	if r := holder.wait(t, 15*time.Second); r.code != 0 {
		t.Errorf("holder exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
}
