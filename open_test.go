package baton_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/memlock"
)

func TestOpenUnregisteredSchemeNamesTheImport(t *testing.T) {
	_, err := baton.Open(context.Background(), "redis://localhost:6379")
	if !errors.Is(err, baton.ErrInvalidOption) || !strings.Contains(err.Error(), `import _ "github.com/baton-go/baton/redislock"`) {
		t.Fatalf("Open(redis://) without redislock: %v, want ErrInvalidOption naming the import", err)
	}
	_, err = baton.Open(context.Background(), "nosuch://u:secret@h")
	if !errors.Is(err, baton.ErrInvalidOption) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("Open(nosuch://): %v, want ErrInvalidOption without the password", err)
	}
}

func TestOpenRefusesBadOptions(t *testing.T) {
	for _, o := range []baton.Option{baton.WithTTL(-1), baton.WithTTL(baton.MaxTTL + 1), baton.WithConnectTimeout(0), baton.WithGetenv(nil)} {
		if _, err := baton.Open(context.Background(), "mem://opts", o); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("Open with a bad option: %v, want ErrInvalidOption", err)
		}
	}
}

// TestOpenMem runs the one-API round on memlock: lock, a second grant's
// token rises, Inspect shows this process as the holder, release.
func TestOpenMem(t *testing.T) {
	ctx := context.Background()
	c, err := baton.Open(ctx, "mem://open-test", baton.WithLabel("team", "pay"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Engine() != "mem" {
		t.Errorf("Engine() = %q, want mem", c.Engine())
	}
	m, err := c.Mutex("jobs/nightly")
	if err != nil {
		t.Fatal(err)
	}
	l1, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in, err := c.Inspect(ctx, "jobs/nightly")
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if len(in.Holders) != 1 || in.Holders[0].Host != host || in.Holders[0].PID != os.Getpid() ||
		in.Holders[0].Labels["team"] != "pay" || in.Holders[0].Mode != "mutex" {
		t.Fatalf("Inspect holders = %+v, want this process (%s, %d, team=pay) holding the mutex", in.Holders, host, os.Getpid())
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Token() <= l1.Token() {
		t.Errorf("second token %d, want > %d", l2.Token(), l1.Token())
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if in, err := c.Inspect(ctx, "jobs/nightly"); err != nil || len(in.Holders)+len(in.Waiters) != 0 {
		t.Errorf("Inspect after release = %+v, %v; want empty", in, err)
	}
	if mc, ok := baton.As[*memlock.Client](c); !ok || mc == nil {
		t.Error("As[*memlock.Client] found nothing")
	}
	if _, ok := baton.As[*strings.Builder](c); ok {
		t.Error("As of a type the engine does not have reported ok")
	}
}

func TestClientRecipesReportBadNames(t *testing.T) {
	srv := memlock.NewServer(memlock.Options{})
	defer srv.Close()
	c := srv.Client("a")
	ctx := context.Background()
	if m, err := c.Mutex(""); !errors.Is(err, baton.ErrInvalidName) || m != nil {
		t.Errorf("Mutex(\"\") = %v, %v; want nil, ErrInvalidName", m, err)
	}
	if rw, err := c.RWMutex(""); !errors.Is(err, baton.ErrInvalidName) || rw != nil {
		t.Errorf("RWMutex(\"\") = %v, %v; want nil, ErrInvalidName", rw, err)
	}
	s, err := c.Semaphore("s", 0)
	if err == nil {
		_, err = s.Acquire(ctx)
	}
	if !errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Semaphore(s, 0): %v, want ErrInvalidOption", err)
	}
	if e, err := c.Election(""); !errors.Is(err, baton.ErrInvalidName) || e != nil {
		t.Errorf("Election(\"\") = %v, %v; want nil, ErrInvalidName", e, err)
	}
}

// TestAsLockObjects: As reaches the engine's own lock objects behind the
// root's, by an interface, and refuses what they lack or is not baton's.
func TestAsLockObjects(t *testing.T) {
	srv := memlock.NewServer(memlock.Options{})
	defer srv.Close()
	c := srv.Client("a")
	defer c.Close()
	type named interface{ Name() string }
	m, _ := c.Mutex("jobs/a")
	rw, _ := c.RWMutex("jobs/b")
	s, _ := c.Semaphore("jobs/c", 2)
	e, _ := c.Election("jobs/d")
	for _, v := range []any{m, rw, s, e} {
		n, ok := baton.As[named](v)
		if !ok || !strings.HasPrefix(n.Name(), "jobs/") {
			t.Errorf("As[named](%T) = %v, %v; want the engine's lock object", v, n, ok)
		}
		if _, ok := baton.As[interface{ Nope() }](v); ok {
			t.Errorf("As of a method %T's engine object lacks reported ok", v)
		}
	}
	if _, ok := baton.As[named]("jobs/a"); ok {
		t.Error("As of a value that is not baton's reported ok")
	}
}
