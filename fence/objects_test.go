package fence_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
)

func TestDirStore(t *testing.T) {
	ctx := t.Context()
	s := fence.DirStore{Root: t.TempDir()}
	for _, name := range []string{"a/1", "a/2", "a/b/3", "ab/4"} {
		if err := s.Put(ctx, name, strings.NewReader("data "+name)); err != nil {
			t.Fatalf("Put(%q) = %v", name, err)
		}
	}
	if err := s.Put(ctx, "a/1", strings.NewReader("replaced")); err != nil {
		t.Fatalf("Put(a/1) again = %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(s.Root, "a", "1")); err != nil || string(b) != "replaced" {
		t.Errorf("file a/1 = %q, %v, want %q", b, err, "replaced")
	}
	names := func(prefix string) []string {
		objs, err := s.List(ctx, prefix)
		if err != nil {
			t.Fatalf("List(%q) = %v", prefix, err)
		}
		var out []string
		for _, o := range objs {
			out = append(out, o.Name)
		}
		slices.Sort(out)
		return out
	}
	for prefix, want := range map[string][]string{
		"a/":   {"a/1", "a/2", "a/b/3"},
		"a":    {"a/1", "a/2", "a/b/3", "ab/4"},
		"a/b/": {"a/b/3"},
		"zz/":  nil,
		"":     {"a/1", "a/2", "a/b/3", "ab/4"},
	} {
		if got := names(prefix); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", prefix, got, want)
		}
	}
	if err := s.Delete(ctx, "a/2"); err != nil {
		t.Errorf("Delete(a/2) = %v", err)
	}
	if err := s.Delete(ctx, "a/2"); err != nil {
		t.Errorf("Delete(a/2) again = %v, want nil", err)
	}
	if got := names("a/"); !slices.Equal(got, []string{"a/1", "a/b/3"}) {
		t.Errorf("List(a/) after Delete = %q", got)
	}
	// A failed upload leaves neither the object nor a temporary file.
	boom := errors.New("reader failed")
	if err := s.Put(ctx, "a/fail", io.MultiReader(strings.NewReader("part"), errReader{boom})); !errors.Is(err, boom) {
		t.Errorf("Put(a/fail) = %v, want %v", err, boom)
	}
	if entries, err := os.ReadDir(filepath.Join(s.Root, "a")); err != nil || len(entries) != 2 {
		t.Errorf("directory a after a failed Put = %v, %v, want a/1 and a/b only", entries, err)
	}
	for _, bad := range []string{"", "/abs", "../up", "a/../b", "a//b", "a/./b", "a/", `a\b`, "a/.fence-tmp-x"} {
		if err := s.Put(ctx, bad, strings.NewReader("x")); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("Put(%q) = %v, want %v", bad, err, baton.ErrInvalidOption)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// publisher makes a Publisher with a fresh pointer table (schema-qualified,
// to exercise that path too) over a fresh directory store.
func publisher(t *testing.T, b backend) fence.Publisher {
	t.Helper()
	schema := "main"
	switch b.table.Dialect {
	case fence.Postgres:
		schema = "public"
	case fence.MySQL:
		schema = mysqlDatabase(t, b.db)
	}
	p := fence.Publisher{
		Store:   fence.DirStore{Root: t.TempDir()},
		Table:   schema + ".fence_ptr_" + engine.NewOwnerID()[:12],
		Dialect: b.table.Dialect,
	}
	t.Cleanup(func() {
		if _, err := b.db.ExecContext(context.Background(), `DROP TABLE IF EXISTS `+quote(b.table.Dialect, p.Table)); err != nil {
			t.Errorf("DROP TABLE %s = %v", p.Table, err)
		}
	})
	for range 2 {
		if err := p.Migrate(t.Context(), b.db); err != nil {
			t.Fatalf("Publisher.Migrate = %v", err)
		}
	}
	return p
}

// TestPublisherExport88 is the export-88 story on an object store without
// conditional writes: A (701) loses the lock and pauses, B (702)
// uploads and publishes, retries the same publish after a lost response,
// then A uploads and publishes late. The pointer must stay at B's object,
// A's upload must be listed as an orphan (once the grace has passed), and
// the unfenced control must let A repoint the name.
func TestPublisherExport88(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		p := publisher(t, b)
		const name = "exports/export-88"

		objB, err := p.Write(ctx, b.db, name, 702, "B", strings.NewReader("result of B"))
		if err != nil {
			t.Fatalf("B's Write(702) = %v", err)
		}
		if again, err := p.Write(ctx, b.db, name, 702, "B", strings.NewReader("result of B")); err != nil || again != objB {
			t.Errorf("B's retried Write(702) = %q, %v, want %q, nil", again, err, objB)
		}
		objA, err := p.Write(ctx, b.db, name, 701, "A", strings.NewReader("result of A"))
		var se *fence.StaleError
		if !errors.Is(err, baton.ErrStaleToken) || !errors.As(err, &se) || se.Resource != name || se.StoredToken != 702 || se.StoredOwner != "B" {
			t.Errorf("A's late Write(701) = %v, want stale after (702, B)", err)
		}
		if objA == "" || objA == objB || !strings.HasPrefix(objA, name+"/701-") {
			t.Errorf("A's object = %q, want a distinct %s/701-… object", objA, name)
		}
		// A rewound counter: another owner with B's token gets its own object
		// and is refused too.
		objC, err := p.Write(ctx, b.db, name, 702, "C", strings.NewReader("result of C"))
		if !errors.Is(err, baton.ErrStaleToken) || objC == objB {
			t.Errorf("C's Write(702) = %q, %v, want a stale write to its own object", objC, err)
		}

		ptr, err := p.Published(ctx, b.db, name)
		if err != nil || ptr != (fence.Pointer{Object: objB, Token: 702, Owner: "B"}) {
			t.Errorf("Published = %+v, %v, want B's object %q with (702, B)", ptr, err, objB)
		}
		if data, err := os.ReadFile(filepath.Join(p.Store.(fence.DirStore).Root, filepath.FromSlash(ptr.Object))); err != nil || string(data) != "result of B" {
			t.Errorf("published object holds %q, %v, want B's result", data, err)
		}

		// Within the grace nothing is an orphan; after it, A's and C's are,
		// never the published one nor another name's object.
		if err := p.Store.Put(ctx, name+"/sub/1-0123456789abcdef", strings.NewReader("other name")); err != nil {
			t.Fatalf("Put(other name) = %v", err)
		}
		if o, err := p.Orphans(ctx, b.db, name, time.Now().Add(-time.Hour)); err != nil || len(o) != 0 {
			t.Errorf("Orphans(grace 1h) = %v, %v, want none", o, err)
		}
		o, err := p.Orphans(ctx, b.db, name, time.Now().Add(time.Second))
		var got []string
		for _, x := range o {
			got = append(got, x.Name)
		}
		if want := slices.Sorted(slices.Values([]string{objA, objC})); err != nil || !slices.Equal(got, want) {
			t.Errorf("Orphans(grace passed) = %q, %v, want %q", got, err, want)
		}
		for _, x := range o {
			if err := p.Store.Delete(ctx, x.Name); err != nil {
				t.Errorf("Delete(%s) = %v", x.Name, err)
			}
		}
		if o, err := p.Orphans(ctx, b.db, name, time.Now().Add(time.Second)); err != nil || len(o) != 0 {
			t.Errorf("Orphans after cleanup = %v, %v, want none", o, err)
		}
		if ptr2, err := p.Published(ctx, b.db, name); err != nil || ptr2 != ptr {
			t.Errorf("Published after cleanup = %+v, %v, want %+v", ptr2, err, ptr)
		}

		// Negative control: the same story without the fence repoints the
		// name at A's late upload.
		const name2 = "exports/export-88-unfenced"
		u := fence.UnfencedPublisher{Publisher: p}
		if _, err := u.Write(ctx, b.db, name2, 702, "B", strings.NewReader("result of B")); err != nil {
			t.Fatalf("unfenced B's Write(702) = %v", err)
		}
		lateA, err := u.Write(ctx, b.db, name2, 701, "A", strings.NewReader("result of A"))
		if err != nil {
			t.Errorf("unfenced A's late Write(701) = %v, want nil (the control lets it land)", err)
		}
		if ptr, err := p.Published(ctx, b.db, name2); err != nil || ptr.Object != lateA || ptr.Token != 701 {
			t.Errorf("unfenced Published = %+v, %v, want A's late object %q: the control must go wrong", ptr, err, lateA)
		}
	})
}

// TestPublisherNeverPublished: every old object of a name never published
// is an orphan; a missing pointer is sql.ErrNoRows-shaped; bad names are
// refused before anything is uploaded.
func TestPublisherNeverPublished(t *testing.T) {
	forEachDB(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		p := publisher(t, b)
		obj, err := p.Put(ctx, "jobs/j7", 81, "A", strings.NewReader("checkpoint"))
		if err != nil {
			t.Fatalf("Put = %v", err)
		}
		if o, err := p.Orphans(ctx, b.db, "jobs/j7", time.Now().Add(time.Second)); err != nil || len(o) != 1 || o[0].Name != obj {
			t.Errorf("Orphans(never published) = %v, %v, want [%s]", o, err, obj)
		}
		if _, err := p.Published(ctx, b.db, "jobs/j7"); err == nil {
			t.Errorf("Published(never published) = nil error, want one wrapping sql.ErrNoRows")
		}
		for _, bad := range []string{"", "/a", "a//b", "a/../b", "a/."} {
			if _, err := p.Put(ctx, bad, 1, "A", strings.NewReader("x")); !errors.Is(err, baton.ErrInvalidOption) {
				t.Errorf("Put(%q) = %v, want %v", bad, err, baton.ErrInvalidOption)
			}
		}
		if _, err := p.Put(ctx, "a", fence.MaxToken+1, "A", strings.NewReader("x")); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("Put(token > MaxToken) = %v, want %v", err, baton.ErrInvalidOption)
		}
		if objs, err := p.Store.List(ctx, ""); err != nil || len(objs) != 1 {
			t.Errorf("store holds %v, %v, want only the one valid upload", objs, err)
		}
	})
}
