package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-go/baton/batontest/testenv"
)

// asRoot skips (fails under CI) a case that must give a file away.
func asRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "needs root to give a file away (CI runs scripts/test.sh as root)")
	}
}

// TestSQLiteExplicitPath: an explicit sqlite:// file gets the embedded
// default's protections where they apply to a file the user named: it is
// created 0600 (its -wal and -shm follow its mode), a symbolic link is
// followed only when the user (or root) made it, and a directory anyone
// may write into without the sticky bit, or another user's file in a
// sticky one, is refused with exit 69.
func TestSQLiteExplicitPath(t *testing.T) {
	run := func(t *testing.T, file string) result {
		return runBaton(t, nil, "run", "--backend", "sqlite://"+file, lockName(t), "--", "true")
	}
	private := func(t *testing.T, file string) {
		t.Helper()
		for _, f := range []string{file, file + "-wal", file + "-shm"} {
			fi, err := os.Stat(f)
			if err == nil && fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s has mode %v, want no group or other access", f, fi.Mode().Perm())
			}
			if err != nil && f == file {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	t.Run("new file", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "locks.db")
		if r := run(t, db); r.code != 0 {
			t.Fatalf("run = exit %d, stderr %q; want 0", r.code, r.stderr)
		}
		private(t, db)
	})
	t.Run("new file in a sticky world-writable directory", func(t *testing.T) {
		dir := t.TempDir()
		must(t, os.Chmod(dir, os.ModeSticky|0o777))
		db := filepath.Join(dir, "locks.db")
		if r := run(t, db); r.code != 0 {
			t.Fatalf("run = exit %d, stderr %q; want 0 (the sticky bit keeps others from swapping it)", r.code, r.stderr)
		}
		private(t, db)
	})
	t.Run("own symbolic link", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "real.db")
		must(t, os.WriteFile(target, nil, 0o600))
		link := filepath.Join(t.TempDir(), "locks.db")
		must(t, os.Symlink(target, link))
		if r := run(t, link); r.code != 0 {
			t.Fatalf("run = exit %d, stderr %q; want 0 (the user's own link is followed)", r.code, r.stderr)
		}
	})
	t.Run("existing shared file keeps its mode", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "locks.db")
		must(t, os.WriteFile(db, nil, 0o660))
		must(t, os.Chmod(db, 0o660))
		if r := run(t, db); r.code != 0 {
			t.Fatalf("run = exit %d, stderr %q; want 0", r.code, r.stderr)
		}
		if fi, err := os.Stat(db); err != nil || fi.Mode().Perm() != 0o660 {
			t.Errorf("after the run: %v, %v; want 0660 kept (a file the user named may be shared on purpose)", fi.Mode().Perm(), err)
		}
	})

	refused := []struct {
		name  string
		setup func(t *testing.T, db string) // db is locks.db in a fresh directory
		want  string
	}{
		{"another user's symbolic link", func(t *testing.T, db string) {
			asRoot(t)
			must(t, os.Symlink(filepath.Join(t.TempDir(), "victim.db"), db))
			must(t, os.Lchown(db, 65534, 65534))
		}, "symbolic link owned by uid 65534"},
		{"another user's symbolic link to an existing file", func(t *testing.T, db string) {
			asRoot(t)
			victim := filepath.Join(t.TempDir(), "victim.db")
			must(t, os.WriteFile(victim, nil, 0o600))
			must(t, os.Symlink(victim, db))
			must(t, os.Lchown(db, 65534, 65534))
		}, "symbolic link owned by uid 65534"},
		{"world-writable directory without the sticky bit", func(t *testing.T, db string) {
			must(t, os.Chmod(filepath.Dir(db), 0o777))
		}, "writable by others without the sticky bit"},
		{"another user's file in a sticky world-writable directory", func(t *testing.T, db string) {
			asRoot(t)
			must(t, os.Chmod(filepath.Dir(db), os.ModeSticky|0o777))
			must(t, os.WriteFile(db, nil, 0o666))
			must(t, os.Chown(db, 65534, 65534))
		}, "owned by uid 65534"},
		{"another user's -wal in a sticky world-writable directory", func(t *testing.T, db string) {
			asRoot(t)
			must(t, os.Chmod(filepath.Dir(db), os.ModeSticky|0o777))
			must(t, os.WriteFile(db+"-wal", nil, 0o666))
			must(t, os.Chown(db+"-wal", 65534, 65534))
		}, "owned by uid 65534"},
		{"directory that is another user's symbolic link", func(t *testing.T, db string) {
			asRoot(t)
			dir := filepath.Dir(db)
			must(t, os.Remove(dir))
			must(t, os.Symlink(t.TempDir(), dir))
			must(t, os.Lchown(dir, 65534, 65534))
		}, "symbolic link owned by uid 65534"},
		{"not a regular file", func(t *testing.T, db string) {
			must(t, os.Mkdir(db, 0o700))
		}, "not a regular file"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "work", "locks.db")
			must(t, os.Mkdir(filepath.Dir(db), 0o700))
			tt.setup(t, db)
			before := snapshotDir(t, filepath.Dir(db))
			r := run(t, db)
			if r.code != 69 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("run = exit %d, stderr %q; want 69 saying %q", r.code, r.stderr, tt.want)
			}
			if after := snapshotDir(t, filepath.Dir(db)); after != before {
				t.Errorf("the refused run changed the directory: %s, then %s", before, after)
			}
		})
	}
}

// snapshotDir lists dir's entries with the mode and size of what each
// leads to (a link's target): what a refused run must not change.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range es {
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil {
			fmt.Fprintf(&b, "%s=%v/%d ", e.Name(), fi.Mode(), fi.Size())
		} else {
			fmt.Fprintf(&b, "%s=missing ", e.Name())
		}
	}
	return "[" + b.String() + "]"
}
