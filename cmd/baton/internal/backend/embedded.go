package backend

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// The embedded default keeps every lock of the user's jobs in one SQLite
// file: whoever can write it can take or release any of them, and whoever
// can read it learns what the user runs. So its directory must be the
// user's own, a real directory and writable by nobody else, and the file
// (with SQLite's -wal and -shm beside it) readable by the user alone.

// secureEmbedded creates the embedded default's directory (0700) and file
// (0600) if missing, and refuses them when another user could reach in: a
// directory that is a symbolic link, not the user's, or writable by group
// or others; a file that is a symbolic link or not the user's. A file of
// the user's with group or other permissions (SQLite creates it 0644 by
// the umask) is narrowed to 0600, with a note.
func secureEmbedded(env *cli.Env, file string) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("refusing the state directory %s: it is a symbolic link; make it a directory of your own (0700)", dir)
	case !fi.IsDir():
		return fmt.Errorf("refusing the state directory %s: not a directory", dir)
	case !ownedByMe(fi):
		return fmt.Errorf("refusing the state directory %s: owned by uid %d, not by you (uid %d)", dir, ownerOf(fi), os.Getuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("refusing the state directory %s: writable by group or others (%v); chmod 700 it", dir, fi.Mode().Perm())
	}
	for _, f := range []string{file, file + "-wal", file + "-shm"} {
		if err := secureFile(env, f); err != nil {
			return err
		}
	}
	return createPrivate(file)
}

// secureFile checks one existing file of the embedded default (a missing
// one is fine) and narrows its permissions to 0600.
func secureFile(env *cli.Env, f string) error {
	fi, err := os.Lstat(f)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0 || !fi.Mode().IsRegular():
		return fmt.Errorf("refusing %s: not a regular file (a symbolic link?)", f)
	case !ownedByMe(fi):
		return fmt.Errorf("refusing %s: owned by uid %d, not by you (uid %d)", f, ownerOf(fi), os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		if err := os.Chmod(f, 0o600); err != nil {
			return err
		}
		env.Note("%s was accessible to group or others (%v): narrowed to 0600", f, fi.Mode().Perm())
	}
	return nil
}

func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

func ownedByMe(fi fs.FileInfo) bool { return ownerOf(fi) == os.Getuid() }

// createPrivate creates file 0600 when it does not exist. O_EXCL: an
// existing file (or link) was checked by the caller; O_NOFOLLOW: no link
// planted in between is followed.
func createPrivate(file string) error {
	fd, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err == nil {
		return fd.Close()
	}
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// localPath is the file of a sqlite:// URL (the embedded default's too).
func localPath(u URL) string {
	path, _, _ := strings.Cut(strings.SplitN(u.Orig, "://", 2)[1], "?")
	return path
}
