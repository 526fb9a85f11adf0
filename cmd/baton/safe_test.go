package main_test

import (
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	_ "modernc.org/sqlite"
)

// secretCases are passwords as typed in a backend URL (unescaped '/',
// '#', '?', '@', '%' included) with the fragments that must never be
// printed.
var secretCases = []struct{ typed, decoded string }{
	{"S3/cr#t?xq", "S3/cr#t?xq"},
	{"Zq%zzW@k/9", "Zq%zzW@k/9"},
	{"Pw%2Fenc%40X", "Pw/enc@X"},
}

// TestRedactOutputs: a password in --backend, whatever it holds, appears
// in no output — usage errors (text and JSON), connect failures of run
// and inspect, debug records — and a connecting command warns that the
// password was on the command line.
func TestRedactOutputs(t *testing.T) {
	for _, sc := range secretCases {
		ui := "alice:" + sc.typed + "@"
		tests := []struct {
			name     string
			args     []string
			code     int
			warnArgv bool
		}{
			{"usage error", []string{"run", "--backend", "mysql://" + ui + "127.0.0.1:1/db?bogus=1", "n", "--", "true"}, 64, false},
			{"usage error json", []string{"run", "--log-format", "json", "--backend", "mysql://" + ui + "127.0.0.1:1/db?bogus=1", "n", "--", "true"}, 64, false},
			{"unknown scheme", []string{"run", "--backend", "consul://" + ui + "127.0.0.1:1", "n", "--", "true"}, 64, false},
			{"inspect unreachable", []string{"inspect", "--connect-timeout", "300ms", "--backend", "postgres://" + ui + "127.0.0.1:1/db?sslmode=disable", "n"}, 69, true},
			{"run json debug", []string{"run", "--log-format", "json", "--log-level", "debug", "--connect-timeout", "300ms",
				"--backend", "etcd://" + ui + "127.0.0.1:1", "n", "--", "true"}, 69, true},
			{"run redis", []string{"run", "--connect-timeout", "300ms", "--backend", "redis://" + ui + "127.0.0.1:1/0", "n", "--", "true"}, 69, true},
		}
		for _, tt := range tests {
			t.Run(sc.typed+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				r := runBaton(t, nil, tt.args...)
				if r.code != tt.code {
					t.Errorf("baton %s exit = %d, want %d; stderr:\n%s", tt.name, r.code, tt.code, r.stderr)
				}
				noSecret(t, r.stdout+r.stderr, sc.typed, sc.decoded)
				if got := strings.Contains(r.stderr, "--backend holds a password"); got != tt.warnArgv {
					t.Errorf("argv password warning shown = %v, want %v; stderr:\n%s", got, tt.warnArgv, r.stderr)
				}
			})
		}
	}
}

// TestRedactNoWarningFromEnv: the same password in BATON_BACKEND is not
// on the command line: no warning, and still never printed.
func TestRedactNoWarningFromEnv(t *testing.T) {
	sc := secretCases[0]
	r := runBaton(t, []string{"BATON_BACKEND=etcd://alice:" + sc.typed + "@127.0.0.1:1"}, "run", "--connect-timeout", "300ms", "n", "--", "true")
	if r.code != 69 {
		t.Errorf("run exit = %d, want 69; stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "--backend holds a password") {
		t.Errorf("warned of a command-line password given in BATON_BACKEND:\n%s", r.stderr)
	}
	noSecret(t, r.stdout+r.stderr, sc.typed, sc.decoded)
}

// noSecret fails when out shows a password, or a recognisable part of it.
func noSecret(t *testing.T, out string, forms ...string) {
	t.Helper()
	for _, f := range forms {
		for _, frag := range []string{f, f[:5], f[len(f)-5:]} {
			if strings.Contains(out, frag) {
				t.Errorf("output shows %q (of a password):\n%s", frag, out)
			}
		}
	}
}

// TestSafeNestedRun: a baton run inside COMMAND finds its parent's
// backend through BATON_BACKEND (so the same NAME is busy there: 75),
// which holds no password; the user and password come from the
// environment, which COMMAND inherits.
func TestSafeNestedRun(t *testing.T) {
	pg := testenv.Postgres(t) // postgres://postgres@127.0.0.1:15432/baton?sslmode=disable
	const secret = "Nest3dSecr3t"
	withPass := strings.Replace(pg, "postgres@", "postgres:"+secret+"@", 1)
	want := strings.Replace(pg, "postgres@", "", 1)
	name := lockName(t)
	script := `echo "backend=$BATON_BACKEND"; "$0" run --wait 0 "$1" -- true; echo "same=$?"; "$0" run --wait 0 "$1-other" -- true; echo "other=$?"`
	r := runBaton(t, []string{"BATON_SQL_USER=postgres"}, "run", "--log-level", "info", "--backend", withPass, name, "--",
		"sh", "-c", script, batonBin, name)
	if r.code != 0 {
		t.Fatalf("run exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	for _, line := range []string{"backend=" + want, "same=75", "other=0"} {
		if !strings.Contains(r.stdout, line+"\n") {
			t.Errorf("COMMAND printed %q, want the line %q", r.stdout, line)
		}
	}
	noSecret(t, r.stdout+r.stderr, secret)
	if !strings.Contains(r.stderr, "leaves out the URL's user and password") {
		t.Errorf("no info record that the password was left out:\n%s", r.stderr)
	}
}

// TestSafeBlankBackend: a BATON_BACKEND that is set but empty or blank is
// a usage error; it does not fall back to the embedded default (no file
// appears in the state directory).
func TestSafeBlankBackend(t *testing.T) {
	for _, v := range []string{"", "  \t"} {
		state := t.TempDir()
		env := []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + state, "BATON_BACKEND=" + v}
		for _, args := range [][]string{{"run", "n", "--", "true"}, {"inspect", "n"}} {
			r := runBaton(t, env, args...)
			if r.code != 64 || !strings.Contains(r.stderr, "BATON_BACKEND is set but empty") {
				t.Errorf("baton %q with BATON_BACKEND=%q: exit %d, stderr %q; want 64 naming BATON_BACKEND", args, v, r.code, r.stderr)
			}
		}
		if _, err := os.Stat(filepath.Join(state, "baton")); !os.IsNotExist(err) {
			t.Errorf("BATON_BACKEND=%q: the embedded default's directory exists (%v)", v, err)
		}
	}
}

// TestSafeEmbeddedNote: the embedded default is named on stderr when it
// is a terminal, and not otherwise (cron mail stays empty).
func TestSafeEmbeddedNote(t *testing.T) {
	env := []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	r := runBaton(t, env, "run", lockName(t), "--", "true")
	if r.code != 0 || r.stderr != "" {
		t.Errorf("run on the embedded default, stderr a pipe: exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
	}
	m, s := openPTY(t)
	p := startBatonWith(t, func(c *exec.Cmd) { c.Stderr = s }, env, "run", lockName(t), "--", "true")
	if res := p.wait(t, 30*time.Second); res.code != 0 {
		t.Fatalf("run with stderr on a terminal: exit %d", res.code)
	}
	s.Close()
	out, _ := io.ReadAll(m) // EIO once the slave side is closed
	if !strings.Contains(string(out), "using the embedded default sqlite://") {
		t.Errorf("stderr on a terminal: %q, want the embedded default named", out)
	}
}

// scrubbed are the variables --scrub-env must remove, kept those it must
// leave.
var (
	scrubbed = []string{"BATON_ZK_PASSWORD", "BATON_ETCD_PASSWORD", "BATON_REDIS_PASSWORD", "BATON_SQL_PASSWORD",
		"PGPASSWORD", "MYSQL_PWD", "REDISCLI_AUTH", "ETCDCTL_PASSWORD", "ETCDCTL_USER",
		"PGPASSFILE", "PGSSLKEY", "BATON_ETCD_KEY", "BATON_REDIS_KEY", "ETCDCTL_KEY"}
	kept = []string{"BATON_SQL_USER", "BATON_ZK_USER", "PGUSER", "BATON_ETCD_CACERT", "BATON_ETCD_CERT", "SAFE_TEST_OTHER"}
)

// TestSafeScrubEnv: `baton run --scrub-env … -- env` shows none of the
// credential variables and every other one; without the flag COMMAND
// inherits them all.
func TestSafeScrubEnv(t *testing.T) {
	backend := "sqlite://" + filepath.Join(t.TempDir(), "locks.db")
	var env []string
	for _, k := range append(slices.Clone(scrubbed), kept...) {
		env = append(env, k+"=value-of-"+k)
	}
	for _, scrub := range []bool{true, false} {
		args := []string{"run", "--backend", backend}
		if scrub {
			args = append(args, "--scrub-env")
		}
		r := runBaton(t, env, append(args, lockName(t), "--", "env")...)
		if r.code != 0 {
			t.Fatalf("baton %q exit = %d; stderr:\n%s", args, r.code, r.stderr)
		}
		got := map[string]bool{}
		for _, line := range strings.Split(r.stdout, "\n") {
			k, _, _ := strings.Cut(line, "=")
			got[k] = true
		}
		for _, k := range scrubbed {
			if got[k] == scrub {
				t.Errorf("--scrub-env %v: COMMAND has %s = %v", scrub, k, got[k])
			}
		}
		for _, k := range append(kept, "BATON_TOKEN", "BATON_BACKEND", "PATH") {
			if !got[k] {
				t.Errorf("--scrub-env %v: COMMAND lacks %s", scrub, k)
			}
		}
	}
}

// TestSafeSQLTransportWarning: before connecting, a PostgreSQL host off
// this machine without sslmode=verify-full, or a MySQL one without
// tls=true, gets one warning line that names the host and never the
// password; loopback hosts and verified TLS get none. (192.0.2.1 is a
// documentation address: nothing answers, the run exits 69.)
func TestSafeSQLTransportWarning(t *testing.T) {
	const secret = "Tr4nsp0rtPw"
	tests := []struct {
		name, url, want string
		env             []string
	}{
		{"pg no sslmode", "postgres://u:" + secret + "@192.0.2.1:5432/x", "no sslmode, so prefer: the credentials", nil},
		{"pg disable", "postgres://u:" + secret + "@192.0.2.1:5432/x?sslmode=disable", "sslmode=disable: the credentials", nil},
		{"pg require", "postgres://u:" + secret + "@192.0.2.1:5432/x?sslmode=require", "sslmode=require: TLS without checking", nil},
		{"pg verify-ca second host", "postgres://u:" + secret + "@127.0.0.1:1,192.0.2.1:5432/x?sslmode=verify-ca", "host 192.0.2.1 with sslmode=verify-ca", nil},
		{"pg PGSSLMODE", "postgres://u:" + secret + "@192.0.2.1:5432/x", "PGSSLMODE=allow", []string{"PGSSLMODE=allow"}},
		{"pg verify-full", "postgres://u:" + secret + "@192.0.2.1:5432/x?sslmode=verify-full", "", nil},
		{"pg PGSSLMODE verify-full", "postgres://u:" + secret + "@192.0.2.1:5432/x", "", []string{"PGSSLMODE=verify-full"}},
		{"pg loopback", "postgres://u:" + secret + "@127.0.0.1:1/x?sslmode=disable", "", nil},
		{"pg localhost", "postgres://u:" + secret + "@localhost:1/x", "", nil},
		{"pg ipv6 loopback", "postgres://u:" + secret + "@[::1]:1/x", "", nil},
		{"pg socket", "postgres://u:" + secret + "@/x?host=/nonexistent-socket-dir", "", nil},
		{"mysql no tls", "mysql://u:" + secret + "@192.0.2.1:3306/x", "tls=false: the credentials", nil},
		{"mysql preferred", "mysql://u:" + secret + "@192.0.2.1:3306/x?tls=preferred", "tls=preferred: the credentials", nil},
		{"mysql skip-verify", "mysql://u:" + secret + "@192.0.2.1:3306/x?tls=skip-verify", "tls=skip-verify: the server's certificate", nil},
		{"mysql tls", "mysql://u:" + secret + "@192.0.2.1:3306/x?tls=true", "", nil},
		{"mysql loopback", "mysql://u:" + secret + "@127.0.0.1:1/x", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { transportWarning(t, tt.url, tt.want, secret, tt.env) })
	}
}

// transportWarning runs inspect on url (an address nothing answers, or a
// closed loopback port) from BATON_BACKEND, so no argv warning mixes in:
// stderr must hold exactly one warning saying want (none when want is
// empty), and never the secret.
func transportWarning(t *testing.T, url, want, secret string, env []string) {
	t.Parallel()
	env = append([]string{"BATON_BACKEND=" + url}, env...)
	r := runBaton(t, env, "inspect", "--connect-timeout", "300ms", "n")
	if r.code != 69 && r.code != 77 {
		t.Errorf("inspect exit = %d, want 69 (or 77); stderr:\n%s", r.code, r.stderr)
	}
	noSecret(t, r.stderr, secret)
	warnings := strings.Count(r.stderr, "baton: warning:")
	switch {
	case want == "" && warnings != 0:
		t.Errorf("warned on %s:\n%s", url, r.stderr)
	case want != "" && (warnings != 1 || !strings.Contains(r.stderr, want)):
		t.Errorf("stderr has %d warnings, want one saying %q:\n%s", warnings, want, r.stderr)
	}
}

// TestSafeCaps: durations past their caps are usage errors naming the
// flag (a --ttl of 600h on ZooKeeper overflowed the client's int32
// milliseconds and exited 69); at the cap they are accepted (the dead
// endpoint then exits 69).
func TestSafeCaps(t *testing.T) {
	tests := []struct {
		flag, over, at string
	}{
		{"--ttl", "24h0m1s", "24h"},
		{"--ttl", "600h", "86400"},
		{"--wait", "169h", "168h"},
		{"--max-hold", "721h", "720h"},
		{"--min-hold", "25h", "24h"},
		{"--grace", "61m", "1h"},
		{"--connect-timeout", "2h", ""},
	}
	for _, tt := range tests {
		for _, engine := range []string{"zk://127.0.0.1:1", "etcd://127.0.0.1:1"} {
			t.Run(tt.flag+"="+tt.over+" "+engine, func(t *testing.T) {
				t.Parallel()
				extra := []string{}
				if tt.flag == "--min-hold" {
					extra = []string{"--max-hold", "720h"}
				}
				args := append([]string{"run", "--backend", engine, "--connect-timeout", "300ms", tt.flag, tt.over}, extra...)
				r := runBaton(t, nil, append(args, "n", "--", "true")...)
				if r.code != 64 || !strings.Contains(r.stderr, tt.flag+" ") || !strings.Contains(r.stderr, "cap") {
					t.Errorf("%s %s: exit %d, stderr %q; want 64 naming the flag and its cap", tt.flag, tt.over, r.code, r.stderr)
				}
				if tt.at == "" {
					return
				}
				args = append([]string{"run", "--backend", engine, "--connect-timeout", "300ms", tt.flag, tt.at}, extra...)
				if r := runBaton(t, nil, append(args, "n", "--", "true")...); r.code != 69 {
					t.Errorf("%s %s (at the cap): exit %d, want 69 (dead endpoint); stderr:\n%s", tt.flag, tt.at, r.code, r.stderr)
				}
			})
		}
	}
}

// TestSafeEmbeddedState: the embedded default refuses a state directory
// another user could write into or swap (0777, a symbolic link, another
// owner), creates locks.db 0600 and narrows an existing 0644 one; a
// relative sqlite:// path is a usage error.
func TestSafeEmbeddedState(t *testing.T) {
	run := func(t *testing.T, state string) result {
		return runBaton(t, []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + state}, "run", lockName(t), "--", "true")
	}
	t.Run("fresh", func(t *testing.T) {
		state := t.TempDir()
		if r := run(t, state); r.code != 0 || r.stderr != "" {
			t.Fatalf("run = exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
		}
		for _, f := range []string{"baton", "baton/locks.db", "baton/locks.db-wal", "baton/locks.db-shm"} {
			fi, err := os.Stat(filepath.Join(state, f))
			if err == nil && fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s has mode %v, want no group or other access", f, fi.Mode().Perm())
			}
			if err != nil && f != "baton/locks.db-wal" && f != "baton/locks.db-shm" {
				t.Errorf("%s: %v", f, err)
			}
		}
	})
	t.Run("existing 0644 file", func(t *testing.T) {
		state := t.TempDir()
		db := filepath.Join(state, "baton", "locks.db")
		if err := os.Mkdir(filepath.Dir(db), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(db, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(db, 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, state)
		if r.code != 0 || !strings.Contains(r.stderr, "narrowed to 0600") {
			t.Errorf("run = exit %d, stderr %q; want 0 and a note that the file was narrowed", r.code, r.stderr)
		}
		if fi, err := os.Stat(db); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("locks.db after the run: %v, %v; want 0600", fi.Mode().Perm(), err)
		}
	})
	refused := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"0777 directory", func(t *testing.T, dir string) {
			must(t, os.Mkdir(dir, 0o700))
			must(t, os.Chmod(dir, 0o777))
		}, "writable by group or others"},
		{"group-writable directory", func(t *testing.T, dir string) {
			must(t, os.Mkdir(dir, 0o700))
			must(t, os.Chmod(dir, 0o770))
		}, "writable by group or others"},
		{"symlinked directory", func(t *testing.T, dir string) {
			must(t, os.Symlink(t.TempDir(), dir))
		}, "symbolic link"},
		{"symlinked file", func(t *testing.T, dir string) {
			must(t, os.Mkdir(dir, 0o700))
			must(t, os.Symlink(filepath.Join(t.TempDir(), "elsewhere.db"), filepath.Join(dir, "locks.db")))
		}, "not a regular file"},
		{"directory of another user", func(t *testing.T, dir string) {
			if os.Getuid() != 0 {
				testenv.Unavailable(t, "needs root to give a directory away (CI runs scripts/test.sh as root)")
			}
			must(t, os.Mkdir(dir, 0o700))
			must(t, os.Chown(dir, 65534, 65534))
		}, "owned by uid 65534"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			tt.setup(t, filepath.Join(state, "baton"))
			r := run(t, state)
			if r.code != 69 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("run = exit %d, stderr %q; want 69 saying %q", r.code, r.stderr, tt.want)
			}
			if _, err := os.Lstat(filepath.Join(state, "baton", "locks.db")); err == nil && tt.name != "symlinked file" {
				t.Errorf("locks.db was created in a refused directory")
			}
		})
	}
	t.Run("relative sqlite path", func(t *testing.T) {
		dir := t.TempDir()
		p := startBatonWith(t, func(c *exec.Cmd) { c.Dir = dir }, nil, "run", "--backend", "sqlite://locks.db", "n", "--", "true")
		if r := p.wait(t, 30*time.Second); r.code != 64 || !strings.Contains(r.stderr, "absolute path") {
			t.Errorf("run on sqlite://locks.db = exit %d, stderr %q; want 64 asking for an absolute path", r.code, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "locks.db")); err == nil {
			t.Errorf("a relative sqlite:// path created %s", filepath.Join(dir, "locks.db"))
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// crafted is an owner and a kind another client wrote into the locks
// table: terminal escapes, a carriage return, NUL, C1 controls and a
// right-to-left override.
const (
	craftedOwner = "own\x1b[2J\x1b]0;pwned\x07er\r\x00\u009b31m\u202eevil"
	craftedKind  = "k\x1b[1A\u0085"
)

// TestSafeInspectEscapes: inspect on SQLite shows a crafted owner and
// kind with every control and bidi character escaped in its table, and
// its JSON holds none of them raw yet decodes to the same strings.
func TestSafeInspectEscapes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "locks.db")
	backend := "sqlite://" + file
	name := lockName(t)
	if r := runBaton(t, nil, "run", "--backend", backend, name, "--", "true"); r.code != 0 { // creates the schema
		t.Fatalf("run exit = %d; stderr:\n%s", r.code, r.stderr)
	}
	db, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	future := time.Now().Add(time.Hour).UnixMicro()
	if _, err := db.Exec(`INSERT INTO baton_locks (name, slot, kind, owner, token, expires_at) VALUES (?, 5, ?, ?, 9, ?)`,
		name, craftedKind, craftedOwner, future); err != nil {
		t.Fatalf("insert the crafted row: %v", err)
	}
	r := runBaton(t, nil, "inspect", "--backend", backend, name)
	if r.code != 0 {
		t.Fatalf("inspect exit = %d; stderr:\n%s", r.code, r.stderr)
	}
	rawControls(t, "table", r.stdout)
	if !strings.Contains(r.stdout, `own\x1b[2J\x1b]0;pwned\x07er\x0d\x00\u009b31m\u202eevil`) ||
		!strings.Contains(r.stdout, `k\x1b[1A\u0085`) {
		t.Errorf("table does not show the escaped owner and kind:\n%s", r.stdout)
	}
	r = runBaton(t, nil, "inspect", "--json", "--backend", backend, name)
	if r.code != 0 {
		t.Fatalf("inspect --json exit = %d; stderr:\n%s", r.code, r.stderr)
	}
	rawControls(t, "JSON", r.stdout)
	var d inspectDoc
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("inspect --json is not JSON: %v\n%s", err, r.stdout)
	}
	if es := d.entries(); len(es) != 1 || es[0].Owner != craftedOwner || es[0].Mode != craftedKind {
		t.Errorf("inspect --json decodes to %+v, want owner %q and mode %q", es, craftedOwner, craftedKind)
	}
}

// rawControls fails when out holds a control character other than a
// newline, a C1 control or a bidirectional override, raw.
func rawControls(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Errorf("%s shows %U raw:\n%q", what, r, out)
			return
		}
	}
}

// TestSafeNestedEmbedded: under the embedded default, COMMAND's
// BATON_BACKEND names the same SQLite file, so a nested run of the same
// NAME finds it busy even with another state directory of its own.
func TestSafeNestedEmbedded(t *testing.T) {
	state := t.TempDir()
	name := lockName(t)
	script := `echo "backend=$BATON_BACKEND"; XDG_STATE_HOME="$2" "$0" run --wait 0 "$1" -- true; echo "same=$?"`
	r := runBaton(t, []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + state}, "run", name, "--",
		"sh", "-c", script, batonBin, name, t.TempDir())
	if r.code != 0 {
		t.Fatalf("run exit = %d; stderr:\n%s", r.code, r.stderr)
	}
	want := "backend=sqlite://" + filepath.Join(state, "baton", "locks.db") + "\n"
	if !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "same=75\n") {
		t.Errorf("COMMAND printed %q, want %q and same=75", r.stdout, want)
	}
}
