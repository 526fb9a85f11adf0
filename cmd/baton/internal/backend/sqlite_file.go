package backend

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// A sqlite:// file the user named holds every lock of the jobs that use
// it, like the embedded default's: whoever can swap it, or plant it before
// the first run, can take or release any of them. But it may be shared on
// purpose (a group's file, in a directory of the group's), so only the
// embedded default's rules that such a share does not break apply to it:
//
//   - a symbolic link (the file, its -wal or -shm, or its directory) is
//     followed only when the user or root owns it: another user's link
//     could point the locks at any file the user can write;
//   - a directory writable by others without the sticky bit is refused:
//     anyone could replace the file between two runs;
//   - in a directory writable by others with the sticky bit (/tmp), a file
//     owned by another user is refused: it was planted there;
//   - the file is created 0600 (SQLite's -wal and -shm take its mode), as
//     SQLite would create it 0644 by the umask; an existing file's mode is
//     the user's choice and is kept.
//
// A refusal is an unavailable backend (exit 69), as the embedded
// default's.

// secureSQLiteFile applies those rules to file, creating it if missing.
func secureSQLiteFile(file string) error {
	dir := filepath.Dir(file)
	if err := trustedLink(dir); err != nil {
		return err
	}
	di, err := os.Stat(dir)
	if err != nil {
		return err // SQLite creates the file but not its directory
	}
	openToAll := di.Mode().Perm()&0o002 != 0
	switch {
	case !di.IsDir():
		return fmt.Errorf("refusing %s: %s is not a directory", file, dir)
	case openToAll && di.Mode()&fs.ModeSticky == 0:
		return fmt.Errorf("refusing %s: its directory %s is writable by others without the sticky bit (%v), "+
			"so anyone can replace the file; chmod o-w or +t it, or use another directory", file, dir, di.Mode().Perm())
	}
	for _, f := range []string{file, file + "-wal", file + "-shm"} {
		if err := checkSQLiteFile(f, openToAll); err != nil {
			return err
		}
	}
	return createPrivate(file)
}

// checkSQLiteFile checks one existing file of a sqlite:// database (a
// missing one is fine); openToAll says its directory is writable by
// others (with the sticky bit).
func checkSQLiteFile(f string, openToAll bool) error {
	if err := trustedLink(f); err != nil {
		return err
	}
	fi, err := os.Stat(f)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if li, lerr := os.Lstat(f); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("refusing %s: a symbolic link to nothing; create its target first", f)
		}
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("refusing %s: not a regular file", f)
	case openToAll && !trustedOwner(fi):
		return fmt.Errorf("refusing %s: owned by uid %d, not by you (uid %d), in a directory anyone can write into",
			f, ownerOf(fi), os.Getuid())
	}
	return nil
}

// trustedLink refuses p if it is a symbolic link owned by neither the
// user nor root; anything else (no link, no file) passes.
func trustedLink(p string) error {
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 || trustedOwner(fi) {
		return nil
	}
	return fmt.Errorf("refusing %s: a symbolic link owned by uid %d, not by you (uid %d) or root", p, ownerOf(fi), os.Getuid())
}

// trustedOwner reports whether fi belongs to the user or to root.
func trustedOwner(fi fs.FileInfo) bool { return ownedByMe(fi) || ownerOf(fi) == 0 }
