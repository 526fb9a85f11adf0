package redislock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/redislock"
)

// TestMutexUncontendedCommands: an uncontended lock+unlock runs exactly
// INCR and SET NX PX, then GET and DEL on the server (the least a fenced
// lock costs there), read off MONITOR for this test's keys. The hash
// layout before ran seven commands.
func TestMutexUncontendedCommands(t *testing.T) {
	t.Parallel()
	addr := redisAddr(t)
	rdb := redisClient(t, addr)
	prefix := testPrefix(t, rdb)
	c := newClient(t, rdb, redislock.Options{Prefix: prefix})
	m, _ := c.Mutex(uniqueName("commands"))
	warm := lock(t, c, "warm") // scripts loaded, connections made
	_ = warm.Release(context.Background())

	got := monitored(t, addr, prefix, func() {
		l, err := m.Lock(opCtx(t, 5*time.Second))
		if err != nil {
			t.Fatalf("Lock = %v", err)
		}
		if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
			t.Fatalf("Release = %v", err)
		}
	})
	if want := []string{"incr", "set", "get", "del"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the scripts' commands of an uncontended lock+unlock = %q, want %q", got, want)
	}
}

// monitored returns, lowercased, the commands that scripts ran on keys
// under prefix while do ran, in order, read off a MONITOR connection to
// addr.
func monitored(t *testing.T, addr, prefix string, do func()) []string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	rd := bufio.NewReader(conn)
	if _, err := fmt.Fprint(conn, "MONITOR\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := rd.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR = %q, %v", line, err)
	}
	do()
	// A marker after the operation: every line before it is in.
	end := prefix + ":end-of-monitor"
	if err := redisClient(t, addr).Get(context.Background(), end).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET %s = %v", end, err)
	}
	var cmds []string
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("MONITOR read: %v (so far %q)", err, cmds)
		}
		if strings.Contains(line, strconv.Quote(end)) {
			return cmds
		}
		// +<time> [<db> lua] "<COMMAND>" "<key>" ...
		_, rest, ok := strings.Cut(line, " lua] \"")
		if !ok || !strings.Contains(line, prefix) {
			continue
		}
		name, _, _ := strings.Cut(rest, "\"")
		cmds = append(cmds, strings.ToLower(name))
	}
}

// parallelMutexTest marks t parallel and returns its server's client, a
// baton client under a prefix of its own and a fresh lock name.
func parallelMutexTest(t *testing.T, what string) (*redis.Client, *baton.Client, string) {
	t.Parallel()
	rdb := redisClient(t, redisAddr(t))
	c := newClient(t, rdb, redislock.Options{Prefix: testPrefix(t, rdb)})
	return rdb, c, uniqueName(what)
}

// TestMutexValue: a mutex's key is one string "<owner> <token> <holder
// record>" that expires with the lease; a waiter's intent appends " +",
// which Inspect does not show as part of the record.
func TestMutexValue(t *testing.T) {
	rdb, c, name := parallelMutexTest(t, "value")
	l := lock(t, c, name)
	m, _ := c.Mutex(name)
	key := keyOf(t, m)
	owner, rest := mutexValue(t, rdb, key)
	tok, rec, _ := strings.Cut(rest, " ")
	if owner != l.Owner() || tok != strconv.FormatUint(l.Token(), 10) || !strings.Contains(rec, "pid=") || strings.Contains(rec, " ") {
		t.Fatalf("value of %s = %q %q, want %q, token %d and a holder record", key, owner, rest, l.Owner(), l.Token())
	}
	if ms, err := rdb.PTTL(context.Background(), key).Result(); err != nil || ms <= 0 {
		t.Errorf("PTTL %s = %v, %v, want the lease time", key, ms, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waited := make(chan error, 1)
	go func() { // owner: the test; ends with ctx or a grant
		w, err := m.Lock(ctx)
		if err == nil {
			err = w.Release(context.Background())
		}
		waited <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for _, rest = mutexValue(t, rdb, key); !strings.HasSuffix(rest, " +"); _, rest = mutexValue(t, rdb, key) {
		if time.Now().After(deadline) {
			t.Fatalf("value with a waiter = %q, want \" +\" appended", rest)
		}
		time.Sleep(10 * time.Millisecond)
	}
	in, err := redislock.Inspect(opCtx(t, 5*time.Second), c, name)
	if err != nil || len(in.Entries) != 2 {
		t.Fatalf("Inspect = %+v, %v, want the holder and a waiter", in, err)
	}
	if e := in.Entries[0]; e.Owner != l.Owner() || e.Token != l.Token() || e.Process.PID != os.Getpid() || e.Process.Labels != nil {
		t.Errorf("Inspect's holder = %+v, want owner %q, token %d, this process and no labels (record %q)", e, l.Owner(), l.Token(), rec)
	}
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Release = %v", err)
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Errorf("waiter = %v", err)
		}
	case <-time.After(2 * time.Second): // its polls are further apart: the release woke it
		t.Errorf("waiter not granted within 2s of the release")
	}
}

// TestMutexOlderLayout: a hash on a mutex's key (the layout of earlier
// versions, held by a client of one) is never granted over: the acquire
// fails with Redis' WRONGTYPE, and Inspect still shows its holder.
func TestMutexOlderLayout(t *testing.T) {
	rdb, c, name := parallelMutexTest(t, "older")
	m, _ := c.Mutex(name)
	key := keyOf(t, m)
	ctx := opCtx(t, 5*time.Second)
	if err := rdb.HSet(ctx, key, "owner", "older", "token", "7", "proc", "pid=1").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.PExpire(ctx, key, time.Minute)
	for what, take := range map[string]func(context.Context) error{
		"TryLock": func(ctx context.Context) error { _, err := m.TryLock(ctx); return err },
		"Lock":    func(ctx context.Context) error { _, err := m.Lock(ctx); return err },
	} {
		if err := take(opCtx(t, 2*time.Second)); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("%s over an older version's hash = %v, want WRONGTYPE", what, err)
		}
	}
	in, err := redislock.Inspect(ctx, c, name)
	if err != nil || len(in.Entries) == 0 || in.Entries[0].Owner != "older" || in.Entries[0].Token != 7 {
		t.Errorf("Inspect over an older version's hash = %+v, %v, want its holder", in, err)
	}
}
