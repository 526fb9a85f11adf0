package main_test

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/faultproxy"
	"github.com/go-sql-driver/mysql"
)

// sqlEngines are the SQL backends, each with the BATON_ENGINE it gives.
var sqlEngines = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"postgres", func(t *testing.T) string { return testenv.Postgres(t) }},
	{"mysql", mysqlURL},
	{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "locks.db") }},
}

// mysqlURL turns the test server's go-sql-driver DSN into the mysql://
// URL users give baton.
func mysqlURL(t *testing.T) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(testenv.MySQL(t))
	if err != nil {
		t.Fatalf("mysql.ParseDSN(%q) = %v", testenv.MySQL(t), err)
	}
	u := url.URL{Scheme: "mysql", Host: cfg.Addr, Path: "/" + cfg.DBName, User: url.UserPassword(cfg.User, cfg.Passwd)}
	if cfg.Passwd == "" {
		u.User = url.User(cfg.User)
	}
	return u.String()
}

// markScript records BATON_ENGINE and BATON_TOKEN in mark, then holds
// until SIGTERM, on which it exits 0.
func markScript(mark string) string {
	return fmt.Sprintf(`trap 'exit 0' TERM; echo "$BATON_ENGINE $BATON_TOKEN" > %q.tmp; mv %q.tmp %q; while :; do sleep 0.05; done`, mark, mark, mark)
}

// readMark waits for a markScript's file and returns engine and token.
func readMark(t *testing.T, mark string) (string, uint64) {
	t.Helper()
	waitFile(t, mark, 15*time.Second)
	b, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("child wrote %q, want \"ENGINE TOKEN\"", b)
	}
	tok, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil || tok == 0 {
		t.Fatalf("BATON_TOKEN = %q, want a positive decimal (%v)", f[1], err)
	}
	return f[0], tok
}

// TestSQL: on each SQL engine the child gets BATON_ENGINE and a token; a
// second run on the same name exits 75 with --wait 0; inspect shows the
// holder's owner, token and lease deadline; after the holder leaves, the
// next grant has a larger token.
func TestSQL(t *testing.T) {
	for _, e := range sqlEngines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			url, name := e.url(t), lockName(t)
			mark := filepath.Join(t.TempDir(), "mark")
			holder := startBaton(t, nil, "run", "--backend", url, "--ttl", "3", name, "--", "sh", "-c", markScript(mark))
			engine, tok := readMark(t, mark)
			if engine != e.name {
				t.Errorf("BATON_ENGINE = %q, want %q", engine, e.name)
			}

			if r := runBaton(t, nil, "run", "--backend", url, "--wait", "0", name, "--", "true"); r.code != 75 {
				t.Errorf("second run --wait 0 exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
			}

			d, r := inspectJSON(t, nil, url, name)
			if q := d.entries(); len(q) != 1 || q[0].Role != "holder" || q[0].Owner == "" ||
				q[0].Token == nil || *q[0].Token != tok || q[0].LeftMS == nil || *q[0].LeftMS <= 0 || *q[0].LeftMS > 3000 {
				t.Errorf("inspect = %s, want one holder with token %d and 0 < lease_left_ms ≤ 3000", r.stdout, tok)
			}
			if e.name == "sqlite" && !slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, "not listed") }) {
				t.Errorf("inspect notes do not say that SQLite's mutex waiters are not listed:\n%s", r.stdout)
			}
			if e.name != "sqlite" {
				// A waiting run is listed after the holder.
				wt := startBaton(t, nil, "run", "--backend", url, "--wait", "20s", name, "--", "true")
				q := waitQueue(t, url, name, 2)
				if len(q) != 2 || q[0].Role != "holder" || q[1].Role != "waiting" || q[1].Mode != "mutex" {
					t.Errorf("inspect with a waiter = %+v, want [holder, mutex waiting]", q)
				}
				stopHolder(t, holder)
				if r := wt.wait(t, 15*time.Second); r.code != 0 {
					t.Errorf("waiting run after the holder left: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
				}
				holder = startBaton(t, nil, "run", "--backend", url, "--ttl", "3", name, "--", "sh", "-c", markScript(mark+"2"))
				_, tok = readMark(t, mark+"2")
			}

			stopHolder(t, holder)
			mark2 := filepath.Join(t.TempDir(), "mark")
			next := startBaton(t, nil, "run", "--backend", url, "--wait", "0", name, "--", "sh", "-c", markScript(mark2))
			if _, tok2 := readMark(t, mark2); tok2 <= tok {
				t.Errorf("next grant's token = %d, want > %d", tok2, tok)
			}
			stopHolder(t, next)
		})
	}
}

// TestEmbeddedDefault: without --backend and BATON_BACKEND, runs on one
// host share a SQLite file in the state directory (created 0700): a
// second run exits 75 with --wait 0, a waiting one runs once the holder
// leaves. Without XDG_STATE_HOME the file goes under ~/.local/state.
func TestEmbeddedDefault(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + state}
	name, dir := lockName(t), t.TempDir()
	mark := filepath.Join(dir, "mark")
	holder := startBaton(t, env, "run", "--ttl", "3", name, "--", "sh", "-c", markScript(mark))
	if engine, _ := readMark(t, mark); engine != "sqlite" {
		t.Errorf("BATON_ENGINE = %q, want sqlite", engine)
	}
	st, err := os.Stat(filepath.Join(state, "baton"))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("Stat(state dir) = %v, %v; want a 0700 directory", st, err)
	}
	if _, err := os.Stat(filepath.Join(state, "baton", "locks.db")); err != nil {
		t.Errorf("embedded database: %v", err)
	}
	if r := runBaton(t, env, "run", "--wait", "0", name, "--", "true"); r.code != 75 {
		t.Errorf("second run --wait 0 exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
	}
	ran := filepath.Join(dir, "waiter-ran")
	waiter := startBaton(t, env, "run", "--wait", "10s", name, "--", "touch", ran)
	time.Sleep(300 * time.Millisecond) // let it wait
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the waiter ran while the holder held")
	}
	stopHolder(t, holder)
	if r := waiter.wait(t, 15*time.Second); r.code != 0 {
		t.Errorf("waiter after the holder left: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}

	home := t.TempDir()
	if r := runBaton(t, []string{"HOME=" + home, "XDG_STATE_HOME="}, "run", name, "--", "true"); r.code != 0 {
		t.Errorf("run with HOME only: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "state", "baton", "locks.db")); err != nil {
		t.Errorf("embedded database under HOME: %v", err)
	}
}

// TestSQLRefused: unreachable PostgreSQL and MySQL exit 69 promptly; a
// MySQL user the server does not know (error 1045) and a PostgreSQL role
// that does not exist (SQLSTATE 28000) exit 77; the password in the URL
// is never printed.
func TestSQLRefused(t *testing.T) {
	pg, my := testenv.Postgres(t), mysqlURL(t)
	pgu, err := url.Parse(pg)
	if err != nil {
		t.Fatalf("url.Parse(%q) = %v", pg, err)
	}
	pgu.User = url.UserPassword("baton_norole", "s3cr3t-pw")
	myu, err := url.Parse(my)
	if err != nil {
		t.Fatalf("url.Parse(%q) = %v", my, err)
	}
	myu.User = url.UserPassword("baton_nouser", "s3cr3t-pw")
	tests := []struct {
		name, url string
		want      int
	}{
		{"postgres unreachable", "postgres://127.0.0.1:1/baton?sslmode=disable", 69},
		{"mysql unreachable", "mysql://root@127.0.0.1:1/baton", 69},
		{"postgres unknown role", pgu.String(), 77},
		{"mysql unknown user", myu.String(), 77},
	}
	startup := runBaton(t, nil, "version").took
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runBaton(t, nil, "run", "--backend", tt.url, "--connect-timeout", "500ms", "n", "--", "true")
			if r.code != tt.want {
				t.Errorf("run exit = %d, want %d; stderr:\n%s", r.code, tt.want, r.stderr)
			}
			if bound := startup + 500*time.Millisecond + 2*time.Second; r.took > bound {
				t.Errorf("run took %v with --connect-timeout 500ms (start-up %v), want ≤ %v", r.took, startup, bound)
			}
			if strings.Contains(r.stderr, "s3cr3t-pw") {
				t.Errorf("stderr shows the password:\n%s", r.stderr)
			}
		})
	}
}

// TestSQLLoss: the link of a PostgreSQL holder goes silent; its renewals
// fail, the lease is lost before the row expires, COMMAND gets SIGTERM
// and baton exits 76.
func TestSQLLoss(t *testing.T) {
	t.Parallel()
	pg, err := url.Parse(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	port := pg.Port()
	if port == "" {
		port = "5432"
	}
	px, err := faultproxy.Start(net.JoinHostPort(pg.Hostname(), port))
	if err != nil {
		t.Fatalf("faultproxy.Start() = %v", err)
	}
	t.Cleanup(px.Close)
	pg.Host = px.Addr
	mark := filepath.Join(t.TempDir(), "running")
	p := startBaton(t, nil, "run", "--backend", pg.String(), "--ttl", "2", "--grace", "500ms", "--connect-timeout", "2s",
		lockName(t), "--", "sh", "-c", holdScript(mark, 0))
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
}

// TestSQLReadWrite: on each SQL engine two --write runs exclude each
// other, --read is refused under a writer, and inspect lists the writer
// and, in the order they will be served, a waiting reader and a waiting
// writer; when the writer leaves, the reader runs before the second
// writer. Two --read runs then hold at once.
func TestSQLReadWrite(t *testing.T) {
	for _, e := range sqlEngines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			url, name, dir := e.url(t), lockName(t), t.TempDir()
			mark := filepath.Join(dir, "writing")
			w := startBaton(t, nil, "run", "--backend", url, "--ttl", "3", "--write", name, "--", "sh", "-c", holdScript(mark, 0))
			waitFile(t, mark, 15*time.Second)
			for _, side := range []string{"--write", "--read"} {
				if r := runBaton(t, nil, "run", "--backend", url, side, "--wait", "0", name, "--", "true"); r.code != 75 {
					t.Errorf("run %s --wait 0 under a writer: exit = %d, want 75; stderr:\n%s", side, r.code, r.stderr)
				}
			}
			// The reader records when it ran; the second writer fails if
			// the reader has not run before it.
			read := filepath.Join(dir, "read")
			rd := startBaton(t, nil, "run", "--backend", url, "--ttl", "3", "--read", name, "--", "touch", read)
			waitQueue(t, url, name, 2)
			w2 := startBaton(t, nil, "run", "--backend", url, "--ttl", "3", "--write", name, "--", "test", "-e", read)
			q := waitQueue(t, url, name, 3)
			if len(q) != 3 || q[0].Mode != "write" || q[0].Role != "holder" || q[1].Mode != "read" || q[1].Role != "waiting" ||
				q[2].Mode != "write" || q[2].Role != "waiting" {
				t.Errorf("inspect = %+v, want [write holder, read waiting, write waiting]", q)
			}
			if _, err := os.Stat(read); err == nil {
				t.Errorf("the reader ran while the writer held")
			}
			stopHolder(t, w)
			if r := rd.wait(t, 15*time.Second); r.code != 0 {
				t.Errorf("waiting reader after the writer left: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
			}
			if r := w2.wait(t, 15*time.Second); r.code != 0 {
				t.Errorf("second writer: exit = %d, want 0 (1: it ran before the reader queued ahead of it); stderr:\n%s", r.code, r.stderr)
			}

			script := func(me, other string) string {
				return fmt.Sprintf(`touch %q; i=0; while [ ! -e %q ]; do sleep 0.05; i=$((i+1)); [ $i -gt 200 ] && exit 9; done; exit 0`,
					filepath.Join(dir, me), filepath.Join(dir, other))
			}
			a := startBaton(t, nil, "run", "--backend", url, "--ttl", "3", "--read", name, "--", "sh", "-c", script("a", "b"))
			b := startBaton(t, nil, "run", "--backend", url, "--ttl", "3", "--read", name, "--", "sh", "-c", script("b", "a"))
			for _, p := range []*proc{a, b} {
				if r := p.wait(t, 20*time.Second); r.code != 0 {
					t.Errorf("run --read exit = %d, want 0 (9: the readers never held at once); stderr:\n%s", r.code, r.stderr)
				}
			}
		})
	}
}

// TestSQLShared: on each SQL engine --shared 2 lets two holders in, the
// third gets 75 with --wait 0 and the permit once a holder leaves.
func TestSQLShared(t *testing.T) {
	for _, e := range sqlEngines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			url, name, dir := e.url(t), lockName(t), t.TempDir()
			var holders []*proc
			for i := range 2 {
				mark := filepath.Join(dir, strconv.Itoa(i))
				holders = append(holders, startBaton(t, nil, "run", "--backend", url, "--ttl", "3", "--shared", "2", name, "--", "sh", "-c", holdScript(mark, 0)))
				waitFile(t, mark, 15*time.Second)
			}
			if r := runBaton(t, nil, "run", "--backend", url, "--shared", "2", "--wait", "0", name, "--", "true"); r.code != 75 {
				t.Errorf("third run --shared 2 --wait 0: exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
			}
			q := inspect(t, url, name)
			if len(q) != 2 || q[0].Mode != "permit" || q[0].Role != "holder" || q[1].Mode != "permit" || q[1].Role != "holder" ||
				q[0].Owner == q[1].Owner {
				t.Errorf("inspect = %+v, want two permit holders", q)
			}
			stopHolder(t, holders[0])
			if r := runBaton(t, nil, "run", "--backend", url, "--shared", "2", "--wait", "0", name, "--", "true"); r.code != 0 {
				t.Errorf("run --shared 2 --wait 0 after a permit came back: exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
			}
			stopHolder(t, holders[1])
		})
	}
}

// TestSQLElect: on each SQL engine one `baton elect` leads with
// BATON_EPOCH, a second waits (inspect: leader, then a waiting
// candidate), elect --wait 0 exits 75, and when the leader leaves the
// second leads with a larger epoch.
func TestSQLElect(t *testing.T) {
	for _, e := range sqlEngines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			url, name, dir := e.url(t), lockName(t), t.TempDir()
			fa, fb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			a := startBaton(t, nil, "elect", "--backend", url, "--ttl", "3", name, "--", "sh", "-c", epochScript(fa))
			waitFile(t, fa, 15*time.Second)
			b := startBaton(t, nil, "elect", "--backend", url, "--ttl", "3", name, "--", "sh", "-c", epochScript(fb))
			q := waitQueue(t, url, name, 2)
			if len(q) != 2 || q[0].Mode != "leader" || q[0].Role != "holder" || q[1].Role != "waiting" {
				t.Errorf("inspect of the election = %+v, want the first leading and the second waiting", q)
			}
			if r := runBaton(t, nil, "elect", "--backend", url, "--wait", "0", name, "--", "true"); r.code != 75 {
				t.Errorf("elect --wait 0 with a leader: exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
			}
			if _, err := os.Stat(fb); err == nil {
				t.Fatalf("the second candidate ran while the first led")
			}
			stopHolder(t, a)
			waitFile(t, fb, 15*time.Second)
			ea, eb := readEpoch(t, fa), readEpoch(t, fb)
			if eb <= ea {
				t.Errorf("epochs: first leader %d, second %d; want the second larger", ea, eb)
			}
			stopHolder(t, b)
			if r := runBaton(t, nil, "elect", "--backend", url, "--wait", "0", name, "--", "sh", "-c", "exit 3"); r.code != 3 {
				t.Errorf("elect --wait 0 after the leaders left, COMMAND exit 3: exit = %d, want 3; stderr:\n%s", r.code, r.stderr)
			}
		})
	}
}
