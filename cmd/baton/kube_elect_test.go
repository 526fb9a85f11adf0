package main_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
)

// The test binary doubles as an elect's COMMAND that writes through a
// fence: with fencedWriterEnv set it runs fencedWriter instead of the
// tests. The variable holds the path prefix of its files, fencedDBEnv the
// SQLite file of the fenced ledger.
const (
	fencedWriterEnv = "KCLI_FENCED_WRITER"
	fencedDBEnv     = "KCLI_FENCED_DB"
	// fencedDSN lets the writers of two processes share the file.
	fencedDSN = "?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_txlock=immediate"
)

func init() {
	if prefix := os.Getenv(fencedWriterEnv); prefix != "" {
		os.Exit(fencedWriter(prefix, os.Getenv(fencedDBEnv)))
	}
}

// ledgerFence fences the ledger's writes by the leader's epoch.
var ledgerFence = fence.Table{Name: "fencing_tokens", Dialect: fence.SQLite}

// fencedWriter is a leader's COMMAND: it writes "EPOCH PID" to
// PREFIX.lead, then, each time PREFIX.write appears, appends its
// BATON_EPOCH to the ledger through the fence and writes the outcome to
// PREFIX.result ("ok", else "stale: …" or the error); on SIGTERM it
// writes PREFIX.term and exits 0.
func fencedWriter(prefix, dbPath string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	epoch, err := strconv.ParseUint(os.Getenv("BATON_EPOCH"), 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "BATON_EPOCH:", err)
		return 2
	}
	db, err := sql.Open("sqlite", "file:"+dbPath+fencedDSN)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer db.Close()
	if err := writeAtomic(prefix+".lead", fmt.Sprintf("%d %d", epoch, os.Getpid())); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-term:
			_ = writeAtomic(prefix+".term", "SIGTERM")
			return 0
		case <-tick.C:
		}
		if os.Remove(prefix+".write") != nil {
			continue
		}
		err := ledgerFence.Write(context.Background(), db, "ledger", epoch, "leader-"+strconv.FormatUint(epoch, 10),
			func(tx *sql.Tx) error {
				_, err := tx.Exec("INSERT INTO ledger (epoch) VALUES (?)", epoch)
				return err
			})
		res := "ok"
		switch {
		case errors.Is(err, baton.ErrStaleToken):
			res = "stale: " + err.Error()
		case err != nil:
			res = err.Error()
		}
		_ = writeAtomic(prefix+".result", res)
	}
}

// writeAtomic writes data to path through a temporary file, so that a
// reader never sees it half written.
func writeAtomic(path, data string) error {
	if err := os.WriteFile(path+".tmp", []byte(data), 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// leaderWrite asks the fencedWriter of prefix to write and returns its
// outcome.
func leaderWrite(t *testing.T, prefix string) string {
	t.Helper()
	_ = os.Remove(prefix + ".result")
	if err := os.WriteFile(prefix+".write", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFile(t, prefix+".result", 10*time.Second)
	b, err := os.ReadFile(prefix + ".result")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// leads waits until the fencedWriter of prefix, run by p, leads, and
// returns its epoch and pid.
func leads(t *testing.T, p *proc, prefix string, limit time.Duration) (epoch uint64, pid int) {
	t.Helper()
	p.waitFile(t, prefix+".lead", limit)
	b, err := os.ReadFile(prefix + ".lead")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscan(string(b), &epoch, &pid); err != nil || epoch == 0 {
		t.Fatalf("%s.lead = %q, want a positive epoch and a pid (%v)", prefix, b, err)
	}
	return epoch, pid
}

// TestKubeElectPausedLeader is the paused-leader story on Kubernetes: a
// `baton elect` leader and its COMMAND are SIGSTOPped past the lease; a
// second candidate becomes leader with a larger epoch and writes; the
// paused COMMAND, woken first, writes with its old epoch and the fence
// refuses it; the paused baton, woken, finds the leadership lost, sends
// COMMAND SIGTERM and exits 76.
func TestKubeElectPausedLeader(t *testing.T) {
	t.Parallel()
	url, name, dir := kubeURL(t), lockName(t), t.TempDir()
	dbPath := filepath.Join(dir, "ledger.db")
	db, err := sql.Open("sqlite", "file:"+dbPath+fencedDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := ledgerFence.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE ledger (epoch INTEGER NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	elect := func(prefix string) *proc {
		return startBaton(t, []string{fencedWriterEnv + "=" + prefix, fencedDBEnv + "=" + dbPath},
			"elect", "--backend", url, "--ttl", "2s", "--grace", "2s", name, "--", self)
	}

	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	a := elect(pa)
	ea, childA := leads(t, a, pa, 15*time.Second)
	if res := leaderWrite(t, pa); res != "ok" {
		t.Fatalf("the leader's write with epoch %d = %q, want ok", ea, res)
	}
	for _, pid := range []int{a.cmd.Process.Pid, childA} {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = syscall.Kill(childA, syscall.SIGKILL) })
	stopped := time.Now()

	b := elect(pb)
	eb, _ := leads(t, b, pb, 20*time.Second)
	t.Logf("the second candidate led %v after the leader stopped; epochs %d then %d", time.Since(stopped).Round(time.Millisecond), ea, eb)
	if eb <= ea {
		t.Errorf("epochs: paused leader %d, new leader %d; want the new one larger", ea, eb)
	}
	if res := leaderWrite(t, pb); res != "ok" {
		t.Errorf("the new leader's write with epoch %d = %q, want ok", eb, res)
	}

	// The paused COMMAND wakes before its baton: its late write reaches
	// the fence, which has seen the new epoch.
	if err := syscall.Kill(childA, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	res := leaderWrite(t, pa)
	if !strings.HasPrefix(res, "stale: ") {
		t.Errorf("the deposed leader's late write with epoch %d = %q, want refused as stale", ea, res)
	}
	t.Logf("late write: %s", res)
	var rows []uint64
	q, err := db.Query("SELECT epoch FROM ledger ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var e uint64
		if err := q.Scan(&e); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, e)
	}
	_ = q.Close()
	if fmt.Sprint(rows) != fmt.Sprint([]uint64{ea, eb}) {
		t.Errorf("ledger = %v, want [%d %d]: the late write must leave nothing", rows, ea, eb)
	}

	if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	r := a.wait(t, 20*time.Second)
	if r.code != 76 || !strings.Contains(r.stderr, "lost") {
		t.Errorf("the deposed elect: exit %d, want 76 and the loss reported; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(pa + ".term"); err != nil {
		t.Errorf("the deposed leader's COMMAND was not sent SIGTERM (%v); stderr:\n%s", err, r.stderr)
	}
	t.Logf("deposed elect: exit %d (ran %v); stderr:\n%s", r.code, r.took.Round(time.Millisecond), r.stderr)
	stopHolder(t, b)
}
