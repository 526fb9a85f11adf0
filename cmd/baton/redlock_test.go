package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton/batontest/testenv"
)

// redlockURL returns a redlock:// URL on the five Redlock test nodes with a
// key prefix of the test's own, whose keys are deleted at cleanup.
func redlockURL(t *testing.T) string {
	t.Helper()
	addrs := testenv.Redlock(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "batontest:cli-redlock:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, a := range addrs {
			rdb := redis.NewClient(&redis.Options{Addr: a})
			keys, err := rdb.Keys(ctx, prefix+"*").Result()
			if err == nil && len(keys) > 0 {
				rdb.Del(ctx, keys...)
			}
			_ = rdb.Close()
		}
	})
	return "redlock://" + strings.Join(addrs, ",") + "?prefix=" + prefix
}

// redlockNodes returns the nodes and the key prefix of a redlockURL.
func redlockNodes(t *testing.T, url string) ([]string, string) {
	t.Helper()
	hosts, prefix, ok := strings.Cut(strings.TrimPrefix(url, "redlock://"), "?prefix=")
	if !ok {
		t.Fatalf("redlock URL %q has no prefix", url)
	}
	return strings.Split(hosts, ","), prefix
}

// TestRedlock: on the five Redlock nodes the child gets BATON_ENGINE=redlock
// and a token; a second run exits 75 with --wait 0; a waiting run does not
// start while the holder holds; inspect shows the holder's owner on a
// majority of the nodes, its quorum token (from its first renewal on) and
// its time left; once the
// holder leaves the waiter runs with a larger token, and no node holds
// anything after both ended.
func TestRedlock(t *testing.T) {
	t.Parallel()
	url := redlockURL(t)
	name, dir := lockName(t), t.TempDir()
	mark := filepath.Join(dir, "mark")
	holder := startBaton(t, nil, "run", "--backend", url, "--ttl", "3", name, "--", "sh", "-c", markScript(mark))
	engine, tok := readMark(t, mark)
	if engine != "redlock" {
		t.Errorf("BATON_ENGINE = %q, want redlock", engine)
	}
	if r := runBaton(t, nil, "run", "--backend", url, "--wait", "0", name, "--", "true"); r.code != 75 {
		t.Errorf("second run --wait 0 exit = %d, want 75; stderr:\n%s", r.code, r.stderr)
	}
	mark2 := filepath.Join(dir, "mark2")
	waiter := startBaton(t, nil, "run", "--backend", url, "--wait", "30s", name, "--", "sh", "-c", markScript(mark2))

	// The holder is the owner a majority of the nodes hold, with the
	// grant's quorum token and the time until fewer than a majority hold
	// it; every node answered, and each stores its index. The nodes
	// record the quorum token at the holder's first renewal (TTL/3).
	d, r := inspectJSON(t, nil, url, name)
	for deadline := time.Now().Add(3 * time.Second); len(d.Holders) == 1 && d.Holders[0].Token == nil && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		d, r = inspectJSON(t, nil, url, name)
	}
	if len(d.Holders) != 1 || len(d.Other) != 0 || len(d.Notes) != 0 {
		t.Fatalf("inspect = %s, want one holder, no minority owner, no node's error", r.stdout)
	}
	h := d.Holders[0]
	var on, of int
	if _, err := fmt.Sscanf(h.Note, "held on %d of %d nodes", &on, &of); err != nil || on < 3 || of != 5 {
		t.Errorf("inspect holder note = %q (%v), want it held on a majority (≥ 3) of 5 nodes", h.Note, err)
	}
	if h.Owner == "" || h.Mode != "mutex" || h.Token == nil || *h.Token != tok || h.LeftMS == nil || *h.LeftMS <= 0 || *h.LeftMS > 3000 {
		t.Errorf("inspect holder = %+v, want an owner, quorum token %d, 0 < lease_left_ms ≤ 3000", h, tok)
	}
	nodes, prefix := redlockNodes(t, url)
	for i, a := range nodes {
		rdb := redis.NewClient(&redis.Options{Addr: a})
		idx, err := rdb.Get(t.Context(), prefix+"index").Result()
		_ = rdb.Close()
		if err != nil || idx != fmt.Sprint(i) {
			t.Errorf("node %d (%s) index = %q, %v; want %d", i, a, idx, err, i)
		}
	}
	r = runBaton(t, nil, "inspect", "--backend", url, name)
	if r.code != 0 || !strings.Contains(r.stdout, h.Owner) || !strings.Contains(r.stdout, fmt.Sprint(tok)) ||
		!strings.Contains(r.stdout, "held on") {
		t.Errorf("inspect table: exit %d, want 0 with owner %s, token %d and the nodes that hold it; stdout:\n%s\nstderr:\n%s", r.code, h.Owner, tok, r.stdout, r.stderr)
	}

	time.Sleep(500 * time.Millisecond) // the waiter retried a few times meanwhile
	if _, err := os.Stat(mark2); err == nil {
		t.Fatalf("the waiter ran while the holder held")
	}
	stopHolder(t, holder)
	_, tok2 := readMark(t, mark2)
	if tok2 <= tok {
		t.Errorf("waiter's token = %d, want > %d", tok2, tok)
	}
	stopHolder(t, waiter)
	if d, r := inspectJSON(t, nil, url, name); len(d.Holders)+len(d.Other) != 0 {
		t.Errorf("inspect after both ended = %s, want no node holding", r.stdout)
	}
}

// TestRedlockExclusion: three runs that each make a directory inside their
// critical section (mkdir fails if it exists) and remove it at the end
// never overlap on the five nodes.
func TestRedlockExclusion(t *testing.T) {
	t.Parallel()
	url := redlockURL(t)
	name, dir := lockName(t), t.TempDir()
	in := filepath.Join(dir, "in")
	script := fmt.Sprintf(`mkdir %q || exit 9; sleep 0.3; rmdir %q`, in, in)
	var ps []*proc
	for range 3 {
		ps = append(ps, startBaton(t, nil, "run", "--backend", url, "--ttl", "3", "--wait", "60s", name, "--", "sh", "-c", script))
	}
	for i, p := range ps {
		if r := p.wait(t, 90*time.Second); r.code != 0 {
			t.Errorf("run %d exit = %d, want 0 (exit 9: two runs were inside at once); stderr:\n%s", i, r.code, r.stderr)
		}
	}
}

// TestRedlockUsage: Redlock has only the mutex (--read, --write, --shared
// and elect exit 64 before connecting), clean exits 64, bad URLs exit 64,
// and unreachable nodes (refusing, or silent) exit 69 within the connect
// timeout.
func TestRedlockUsage(t *testing.T) {
	t.Parallel()
	// Three listeners that never answer: connections open, replies never come.
	var silent []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		silent = append(silent, ln.Addr().String())
	}
	dead := "redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"
	startup := runBaton(t, nil, "version").took
	tests := []struct {
		name string
		args []string
		want int
		msg  string
	}{
		{"read", []string{"run", "--backend", dead, "--read", "n", "--", "true"}, 64, "Redlock has only the mutex"},
		{"write", []string{"run", "--backend", dead, "--write", "n", "--", "true"}, 64, "Redlock has only the mutex"},
		{"shared", []string{"run", "--backend", dead, "--shared", "2", "n", "--", "true"}, 64, "Redlock has only the mutex"},
		{"elect", []string{"elect", "--backend", dead, "n", "--", "true"}, 64, "Redlock has only the mutex"},
		{"clean", []string{"clean", "--backend", dead, "n"}, 64, "not applicable to the Redlock engine"},
		{"two nodes", []string{"run", "--backend", "redlock://127.0.0.1:1,127.0.0.1:2", "n", "--", "true"}, 64, "at least 3"},
		{"node twice", []string{"run", "--backend", "redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:1", "n", "--", "true"}, 64, "listed twice"},
		{"no port", []string{"run", "--backend", "redlock://h1,h2,h3", "n", "--", "true"}, 64, "want host:port"},
		{"unknown parameter", []string{"run", "--backend", dead + "?bogus=1", "n", "--", "true"}, 64, "unknown parameter"},
		{"ttl below the minimum", []string{"run", "--backend", dead, "--ttl", "100ms", "n", "--", "true"}, 64, "TTL"},
		{"refused", []string{"run", "--backend", dead, "--connect-timeout", "500ms", "n", "--", "true"}, 69, "backend unreachable"},
		{"silent", []string{"run", "--backend", "redlock://" + strings.Join(silent, ","), "--connect-timeout", "500ms", "n", "--", "true"}, 69, "backend unreachable"},
		{"inspect refused", []string{"inspect", "--backend", dead, "--connect-timeout", "500ms", "n"}, 69, "backend unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBaton(t, nil, tt.args...)
			if r.code != tt.want || !strings.Contains(r.stderr, tt.msg) {
				t.Errorf("baton %q exit = %d, want %d with %q; stderr:\n%s", tt.args, r.code, tt.want, tt.msg, r.stderr)
			}
			if tt.want == 69 {
				if bound := startup + 500*time.Millisecond + 2*time.Second; r.took > bound {
					t.Errorf("took %v with --connect-timeout 500ms (start-up %v), want ≤ %v", r.took, startup, bound)
				}
			}
		})
	}
}

// TestRedlockCredentials: on three private password-protected servers the
// password from BATON_REDIS_PASSWORD or the URL works; a wrong one exits 77;
// the password is never printed.
func TestRedlockCredentials(t *testing.T) {
	t.Parallel()
	addrs := []string{privateRedis(t), privateRedis(t), privateRedis(t)}
	hosts := strings.Join(addrs, ",")
	name := lockName(t)
	tests := []struct {
		name string
		env  []string
		url  string
		want int
	}{
		{"environment", []string{"BATON_REDIS_PASSWORD=" + redisPassword}, "redlock://" + hosts, 0},
		{"URL", nil, "redlock://default:" + redisPassword + "@" + hosts, 0},
		{"wrong password", []string{"BATON_REDIS_PASSWORD=nope-" + redisPassword}, "redlock://" + hosts, 77},
		{"wrong password in URL", nil, "redlock://default:nope-" + redisPassword + "@" + hosts, 77},
		{"no password", nil, "redlock://" + hosts, 77},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBaton(t, tt.env, "run", "--backend", tt.url, "--wait", "5s", name, "--", "sh", "-c", `[ "$BATON_ENGINE" = redlock ] && [ "$BATON_TOKEN" -gt 0 ]`)
			if r.code != tt.want {
				t.Errorf("run exit = %d, want %d; stderr:\n%s", r.code, tt.want, r.stderr)
			}
			if strings.Contains(r.stderr, redisPassword) {
				t.Errorf("stderr shows the password:\n%s", r.stderr)
			}
		})
	}
}
