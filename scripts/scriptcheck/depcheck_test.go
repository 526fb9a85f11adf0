package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/baton-go/baton/scripts/scriptcheck/internal/ci"
)

func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUses finds the command behind each wrapper and skips what is not an
// external command.
func TestUses(t *testing.T) {
	p := writeScript(t, t.TempDir(), "a.sh", `
helper() { echo hi; }
trap 'redis-cli shutdown || true' EXIT
nohup java -cp x Main >log 2>&1 &
runuser -u postgres -- "$bin/initdb" -D data
command -v go >/dev/null
env A=1 B=2 etcdctl get x
timeout -s KILL 2 cat <&3
x=$(ps -o stat= -p 1)
"$fn" arg
scripts/servers.sh stop
helper
exec /usr/sbin/mariadbd
`)
	s, err := parseScripts([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	got, err := uses(s)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range got {
		names = append(names, u.name)
	}
	want := []string{"*/initdb", "/usr/sbin/mariadbd", "cat", "etcdctl", "java", "ps", "redis-cli"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("uses = %q, want %q", names, want)
	}
}

// table is a dpkg given as data: which package owns which file.
type table struct {
	owners map[string]string
	pkgs   map[string]pkgInfo
}

func (d table) owner(file string) string               { return d.owners[file] }
func (d table) installed() (map[string]pkgInfo, error) { return d.pkgs, nil }

// TestCheckFlagsAMissingPackage is the check's reason to exist: a
// command from a package that is installed on this machine but that
// test.sh neither lists nor gets through a dependency fails the check,
// and so does a command not installed at all.
func TestCheckFlagsAMissingPackage(t *testing.T) {
	root := t.TempDir()
	writeScript(t, root, ".ci/run", "exec scripts/test.sh\n")
	writeScript(t, root, "scripts/test.sh", "pk() { apt-get \"$@\" install -y --no-install-recommends listed; }\nlisted-cmd\ndep-cmd\nbase-cmd\n")
	writeScript(t, root, "scripts/servers.d/x.sh", "handy-cmd --flag\nno-such-command-anywhere\n")
	bin := t.TempDir()
	for _, c := range []string{"apt-get", "listed-cmd", "dep-cmd", "base-cmd", "handy-cmd"} {
		writeScript(t, bin, c, "#!/bin/sh\n")
		os.Chmod(filepath.Join(bin, c), 0o755)
	}
	t.Setenv("PATH", bin)
	d := table{
		owners: map[string]string{
			filepath.Join(bin, "listed-cmd"): "listed", filepath.Join(bin, "dep-cmd"): "dep",
			filepath.Join(bin, "base-cmd"): "coreutils", filepath.Join(bin, "handy-cmd"): "by-hand",
			filepath.Join(bin, "apt-get"): "apt",
		},
		pkgs: parseInstalled("ii \tlisted\tno\toptional\t, dep (>= 1) | other:any\t\n" +
			"ii \tdep\tno\toptional\t, \t\n" +
			"ii \tcoreutils\tyes\trequired\t, \t\n" +
			"ii \tapt\tno\trequired\t, \t\n" +
			"ii \tby-hand\tno\toptional\t, \t\n"),
	}
	problems, n, err := check(root, d)
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 { // apt-get, whose install line lists the packages, among them
		t.Errorf("checked %d commands, want 6", n)
	}
	if len(problems) != 2 ||
		!strings.Contains(problems[0], "scripts/servers.d/x.sh:1: handy-cmd: comes from by-hand") ||
		!strings.Contains(problems[1], "x.sh:2: no-such-command-anywhere: not installed") {
		t.Fatalf("problems:\n%s", strings.Join(problems, "\n"))
	}
}

// TestRepository runs the check on this repository, on this machine:
// the check CI relies on (test.sh runs it too, before the servers start).
func TestRepository(t *testing.T) {
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		ci.Unavailable(t, "not a Debian machine: dpkg-query not found")
	}
	problems, n, err := check("../..", realDpkg{})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Errorf("only %d commands found in the scripts: the scan lost some", n)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestPackageListsAgree: test.sh's simulation decides whether to install,
// so it must name the packages its install does; the check fails when the
// two lists differ, and reads the list when they agree.
func TestPackageListsAgree(t *testing.T) {
	dir := t.TempDir()
	for body, wantErr := range map[string]bool{
		"apt-get install --simulate a b\napt-get install -y a b\n": false,
		"apt-get install --simulate a b\napt-get install -y a c\n": true,
	} {
		p := writeScript(t, dir, "test.sh", body)
		s, err := parseScripts([]string{p})
		if err != nil {
			t.Fatal(err)
		}
		list, err := packageList(s, p)
		if (err != nil) != wantErr {
			t.Errorf("%q: packageList = %v, %v; want an error %v", body, list, err, wantErr)
		}
		if !wantErr && strings.Join(list, " ") != "a b" {
			t.Errorf("%q: packageList = %v, want [a b]", body, list)
		}
	}
}
