package redisfence_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/fence/redisfence"
)

// newFence returns a Fence on the shared test Redis with a unique key
// prefix, whose keys are deleted (never FLUSHALL) when the test ends.
func newFence(t *testing.T) (redisfence.Fence, *redis.Client) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: testenv.Redis(t)})
	prefix := "baton-test:fence:" + engine.NewOwnerID()[:12] + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				t.Errorf("DEL %s = %v", iter.Val(), err)
			}
		}
		if err := iter.Err(); err != nil {
			t.Errorf("SCAN %s* = %v", prefix, err)
		}
		_ = c.Close()
	})
	return redisfence.Fence{Client: c, Prefix: prefix}, c
}

type stored struct {
	token uint64
	owner string
}

func TestSetRule(t *testing.T) {
	const big = 1 << 53 // the first integer a Lua double cannot tell from its successor
	cases := []struct {
		name      string
		before    *stored
		token     uint64
		owner     string
		wantStale bool
	}{
		{name: "first write", token: 7, owner: "a"},
		{name: "first write with token 0", token: 0, owner: "a"},
		{name: "higher token", before: &stored{5, "a"}, token: 6, owner: "b"},
		{name: "more digits", before: &stored{9, "a"}, token: 10, owner: "b"},
		{name: "fewer digits", before: &stored{10, "a"}, token: 9, owner: "b", wantStale: true},
		{name: "equal token same owner", before: &stored{5, "a"}, token: 5, owner: "a"},
		{name: "equal token other owner", before: &stored{5, "a"}, token: 5, owner: "b", wantStale: true},
		{name: "lower token", before: &stored{5, "a"}, token: 4, owner: "b", wantStale: true},
		{name: "lower token same owner", before: &stored{5, "a"}, token: 4, owner: "a", wantStale: true},
		{name: "above 2^53", before: &stored{big, "a"}, token: big + 1, owner: "b"},
		{name: "below above 2^53", before: &stored{big + 1, "a"}, token: big, owner: "b", wantStale: true},
		{name: "largest uint64", before: &stored{math.MaxUint64 - 1, "a"}, token: math.MaxUint64, owner: "b"},
	}
	f, c := newFence(t)
	ctx := t.Context()
	for _, tc := range cases {
		res := "rule/" + tc.name
		if tc.before != nil {
			if err := f.Set(ctx, res, tc.before.token, tc.before.owner, "before", nil); err != nil {
				t.Fatalf("%s: first Set(%d, %q) = %v", tc.name, tc.before.token, tc.before.owner, err)
			}
		}
		err := f.Set(ctx, res, tc.token, tc.owner, "after", nil)
		want, wantValue := stored{tc.token, tc.owner}, "after"
		if tc.wantStale {
			want, wantValue = *tc.before, "before"
			var se *fence.StaleError
			if !errors.Is(err, baton.ErrStaleToken) || !errors.As(err, &se) ||
				*se != (fence.StaleError{Resource: res, Token: tc.token, Owner: tc.owner, StoredToken: tc.before.token, StoredOwner: tc.before.owner}) {
				t.Errorf("%s: Set(%d, %q) = %v, want a *StaleError after (%d, %q)", tc.name, tc.token, tc.owner, err, tc.before.token, tc.before.owner)
			}
		} else if err != nil {
			t.Errorf("%s: Set(%d, %q) = %v, want nil", tc.name, tc.token, tc.owner, err)
		}
		if tok, owner, err := f.Current(ctx, res); err != nil || (stored{tok, owner}) != want {
			t.Errorf("%s: Current = %d, %q, %v, want %d, %q", tc.name, tok, owner, err, want.token, want.owner)
		}
		if v, err := c.Get(ctx, f.Keys(res).Data).Result(); err != nil || v != wantValue {
			t.Errorf("%s: GET data = %q, %v, want %q", tc.name, v, err, wantValue)
		}
	}
	if _, _, err := f.Current(ctx, "never/written"); !errors.Is(err, redis.Nil) {
		t.Errorf("Current(never written) = %v, want %v", err, redis.Nil)
	}
}

// TestExport88 is the export-88 story on Redis data, with its negative
// control: A (701) pauses, B (702) publishes and retries, A's late write
// is refused by the fence and lands through the unfenced twin.
func TestExport88(t *testing.T) {
	f, c := newFence(t)
	ctx := t.Context()
	for _, run := range []struct {
		name  string
		set   func(ctx context.Context, resource string, token uint64, owner, value string, opts *redisfence.SetOptions) error
		want  string
		stale bool
	}{
		{"fenced", f.Set, "export-88/702.out", true},
		{"unfenced", redisfence.Unfenced{Fence: f}.Set, "export-88/701.out", false},
	} {
		res := run.name + "/export-88"
		for _, st := range []struct {
			token       uint64
			owner, v    string
			staleIfFenc bool
		}{{702, "B", "export-88/702.out", false}, {702, "B", "export-88/702.out", false}, {701, "A", "export-88/701.out", true}} {
			err := run.set(ctx, res, st.token, st.owner, st.v, nil)
			wantStale := st.staleIfFenc && run.stale
			if errors.Is(err, baton.ErrStaleToken) != wantStale || (err != nil && !wantStale) {
				t.Errorf("%s: Set(%d, %s) = %v, want stale %v", run.name, st.token, st.owner, err, wantStale)
			}
		}
		if v, err := c.Get(ctx, f.Keys(res).Data).Result(); err != nil || v != run.want {
			t.Errorf("%s: pointer = %q, %v, want %q", run.name, v, err, run.want)
		}
	}
}

// TestHSetAndTTL: HSet changes only named fields and nothing when stale;
// a TTL applies to the data, never to the fence.
func TestHSetAndTTL(t *testing.T) {
	f, c := newFence(t)
	ctx := t.Context()
	k := f.Keys("orders/1001")
	if err := f.HSet(ctx, "orders/1001", 502, "B", "status", "PAID", "by", "B"); err != nil {
		t.Fatalf("HSet(502, B) = %v", err)
	}
	if err := f.HSet(ctx, "orders/1001", 501, "A", "status", "CANCELLED", "note", "late"); !errors.Is(err, baton.ErrStaleToken) {
		t.Errorf("HSet(501, A) = %v, want %v", err, baton.ErrStaleToken)
	}
	if err := f.HSet(ctx, "orders/1001", 502, "B", "shipped", "yes"); err != nil {
		t.Errorf("HSet(502, B) again = %v", err)
	}
	got, err := c.HGetAll(ctx, k.Data).Result()
	if err != nil || len(got) != 3 || got["status"] != "PAID" || got["by"] != "B" || got["shipped"] != "yes" {
		t.Errorf("HGETALL data = %v, %v, want status=PAID by=B shipped=yes", got, err)
	}
	if err := (redisfence.Unfenced{Fence: f}).HSet(ctx, "orders/1001", 501, "A", "status", "CANCELLED"); err != nil {
		t.Errorf("unfenced HSet(501, A) = %v", err)
	}
	if s, err := c.HGet(ctx, k.Data, "status").Result(); err != nil || s != "CANCELLED" {
		t.Errorf("status after the unfenced control = %q, %v, want CANCELLED", s, err)
	}

	tk := f.Keys("cache/x")
	if err := f.Set(ctx, "cache/x", 1, "A", "v", &redisfence.SetOptions{TTL: 5 * time.Second}); err != nil {
		t.Fatalf("Set with TTL = %v", err)
	}
	if ttl, err := c.PTTL(ctx, tk.Data).Result(); err != nil || ttl <= 0 || ttl > 5*time.Second {
		t.Errorf("PTTL data = %v, %v, want (0, 5s]", ttl, err)
	}
	if ttl, err := c.PTTL(ctx, tk.Fence).Result(); err != nil || ttl != -1 {
		t.Errorf("PTTL fence = %v, %v, want -1 (no expiry)", ttl, err)
	}
	if tk.Data != f.Prefix+"{cache/x}" || tk.Fence != f.Prefix+"{cache/x}:fence" {
		t.Errorf("Keys(cache/x) = %+v, want both keys with the hash tag {cache/x}", tk)
	}
}

// TestConcurrentSet: writers race with their own tokens; the fence and
// the value end at the largest accepted token, and no writer saw a stale
// write accepted after a larger token (each writer's accepted tokens are
// larger than every token it had been refused for).
func TestConcurrentSet(t *testing.T) {
	f, c := newFence(t)
	ctx := t.Context()
	const writers, rounds = 6, 30
	accepted := make([][]uint64, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for r := range rounds {
				tok := uint64(r*writers + g + 1)
				err := f.Set(ctx, "race", tok, fmt.Sprintf("w%d/r%d", g, r), strconv.FormatUint(tok, 10), nil)
				switch {
				case err == nil:
					accepted[g] = append(accepted[g], tok)
				case !errors.Is(err, baton.ErrStaleToken):
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	var maxTok uint64
	for g := range writers {
		if errs[g] != nil {
			t.Fatalf("writer %d: %v", g, errs[g])
		}
		for _, tok := range accepted[g] {
			maxTok = max(maxTok, tok)
		}
	}
	tok, _, err := f.Current(ctx, "race")
	v, verr := c.Get(ctx, f.Keys("race").Data).Result()
	if err != nil || verr != nil || tok != maxTok || v != strconv.FormatUint(maxTok, 10) {
		t.Errorf("after the race: fence %d (%v), value %q (%v), want both at the largest accepted %d", tok, err, v, verr, maxTok)
	}
	if maxTok != rounds*writers {
		t.Errorf("largest accepted token = %d, want %d (the last token is never stale)", maxTok, rounds*writers)
	}
}

func TestBadInput(t *testing.T) {
	f, c := newFence(t)
	ctx := t.Context()
	cases := []struct {
		name     string
		f        redisfence.Fence
		resource string
		owner    string
	}{
		{"no client", redisfence.Fence{}, "r", "a"},
		{"brace in prefix", redisfence.Fence{Client: c, Prefix: "x{"}, "r", "a"},
		{"empty resource", f, "", "a"},
		{"empty hash tag", f, "}r", "a"},
		{"long resource", f, string(make([]byte, fence.MaxResourceLen+1)), "a"},
		{"empty owner", f, "r", ""},
		{"invalid owner", f, "r", "\xff"},
	}
	for _, tc := range cases {
		if err := tc.f.Set(ctx, tc.resource, 1, tc.owner, "v", nil); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("%s: Set = %v, want %v", tc.name, err, baton.ErrInvalidOption)
		}
	}
	for _, fields := range [][]string{nil, {"a"}, {"a", "b", "c"}} {
		if err := f.HSet(ctx, "r", 1, "a", fields...); !errors.Is(err, baton.ErrInvalidOption) {
			t.Errorf("HSet(%q) = %v, want %v", fields, err, baton.ErrInvalidOption)
		}
	}
	if n, err := c.Exists(ctx, f.Keys("r").Fence, f.Keys("r").Data).Result(); err != nil || n != 0 {
		t.Errorf("keys after refused writes = %d, %v, want none", n, err)
	}
}
