package fence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// DirStore is an ObjectStore in a local directory: object "a/b/7-…" is the
// file Root/a/b/7-…. Like most object stores it has no conditional write,
// which is what the Publisher pattern is for. It is real storage (a shared
// file system such as NFS works the same way), not a test double.
//
// Put writes a hidden temporary file in the target directory and renames it
// into place, so an object appears whole; List never reports the temporary
// files (names starting with ".fence-tmp-", which object names may not use).
type DirStore struct {
	Root string
}

var _ ObjectStore = DirStore{}

const dirTmpPrefix = ".fence-tmp-"

func (s DirStore) path(name string) (string, error) {
	if s.Root == "" {
		return "", invalid("DirStore.Root is empty")
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || path.Clean(name) != name || !filepath.IsLocal(filepath.FromSlash(name)) {
		return "", invalid("object name %q is not a clean relative slash-separated path", name)
	}
	for _, seg := range strings.Split(name, "/") {
		if strings.HasPrefix(seg, dirTmpPrefix) {
			return "", invalid("object name %q uses the reserved prefix %q", name, dirTmpPrefix)
		}
	}
	return filepath.Join(s.Root, filepath.FromSlash(name)), nil
}

// Put writes data to the object name, replacing any object of that name.
func (s DirStore) Put(ctx context.Context, name string, data io.Reader) (err error) {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, dirTmpPrefix+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := io.Copy(f, ctxReader{ctx, data}); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}

// List returns the objects whose names start with prefix.
func (s DirStore) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if s.Root == "" {
		return nil, invalid("DirStore.Root is empty")
	}
	// Walk only the directory the prefix lies in.
	dir := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dir = prefix[:i]
	}
	start := s.Root
	if dir != "" {
		p, err := s.path(dir)
		if err != nil {
			return nil, err
		}
		start = p
	}
	var out []ObjectInfo
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == start {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.IsDir() || strings.HasPrefix(e.Name(), dirTmpPrefix) {
			return nil
		}
		rel, err := filepath.Rel(s.Root, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if !strings.HasPrefix(name, prefix) {
			return nil
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while we walked
		}
		if err != nil {
			return err
		}
		out = append(out, ObjectInfo{Name: name, Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fence: list %q in %s: %w", prefix, s.Root, err)
	}
	return out, nil
}

// Delete removes the object name; a missing object is not an error.
func (s DirStore) Delete(ctx context.Context, name string) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// ctxReader stops a copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}
