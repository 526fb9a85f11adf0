package backend

import (
	"context"
	"testing"
	"time"

	_ "github.com/baton-go/baton/memlock" // an engine the CLI has no power for
)

// TestEngineWithoutPower: an engine linked in with no row in powers (the
// in-process memlock here) needs nothing more of the CLI: its scheme is
// known, it opens, and its mutex, read/write lock, semaphore and election
// come through the engine-agnostic path.
func TestEngineWithoutPower(t *testing.T) {
	if _, ok := powers["mem"]; ok {
		t.Fatal("mem has a power: pick an engine without one")
	}
	env := envWith(map[string]string{})
	cfg := Config{TTL: DefaultTTL, ConnectTimeout: 5 * time.Second}
	cfg.SetBackend("mem://cli-generic")
	if err := Check(&cfg); err != nil {
		t.Fatalf("Check(mem://) = %v", err)
	}
	if CanList(cfg.URL) || CheckClean(&cfg) != nil || CheckHold("elect", &cfg, ModeMutex) != nil {
		t.Errorf("an engine without powers lists, refuses clean or refuses elect")
	}
	ctx := context.Background()
	b, err := Open(ctx, env, &cfg, "n")
	if err != nil {
		t.Fatalf("Open(mem://) = %v", err)
	}
	defer b.Close()
	for _, tc := range []struct {
		mode    Mode
		permits int
	}{{ModeMutex, 0}, {ModeRead, 0}, {ModeWrite, 0}, {ModeShared, 2}} {
		name := []string{"mutex", "rw", "rw", "sem"}[tc.mode]
		l, err := b.Locker(name, tc.mode, tc.permits)
		if err != nil {
			t.Fatalf("Locker(%d) = %v", tc.mode, err)
		}
		lease, err := l.TryLock(ctx)
		if err != nil {
			t.Fatalf("mode %d: TryLock = %v", tc.mode, err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Errorf("mode %d: Release = %v", tc.mode, err)
		}
	}
	e, err := b.Election("leader")
	if err != nil {
		t.Fatalf("Election = %v", err)
	}
	ld, err := e.Campaign(ctx)
	if err != nil {
		t.Fatalf("Campaign = %v", err)
	}
	if ld.Epoch() == 0 {
		t.Errorf("leader's epoch 0, want a token")
	}
	if ttl, err := b.ServerTTL(ctx, &cfg); err != nil || ttl != cfg.TTL {
		t.Errorf("ServerTTL = %v, %v; want the TTL asked for", ttl, err)
	}
}
