package main_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestInspectForeignEtcd puts a key under an etcd lock that no recipe
// writes (a signed suffix, which a lax parser once read as a queue entry
// that blocked the lock invisibly): inspect must flag it foreign, in the
// table and in the JSON, and clean must not count it as removable.
func TestInspectForeignEtcd(t *testing.T) {
	url := etcdURL(t)
	cli := rawEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := "inspect-foreign-" + time.Now().Format("150405.000000")
	if _, err := cli.Put(ctx, name+"/-1", ""); err != nil {
		t.Fatal(err)
	}
	defer cli.Delete(context.Background(), name+"/-1")

	d, r := inspectJSON(t, nil, url, name)
	if q := d.entries(); len(q) != 1 || !q[0].Foreign || q[0].Role != "other" {
		t.Fatalf("inspect --json = %s, want the one key flagged foreign, among the others", r.stdout)
	}
	r = runBaton(t, nil, "inspect", "--backend", url, name)
	if r.code != 0 || !strings.Contains(r.stdout, "foreign") {
		t.Errorf("inspect table (exit %d) does not flag the key foreign:\n%s", r.code, r.stdout)
	}
	r = runBaton(t, nil, "clean", "--backend", url, name)
	if r.code != 0 || strings.Contains(r.stdout, "re-run with --apply") {
		t.Errorf("clean (exit %d) offers to remove a foreign key:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestLeaselessKeyEtcd puts a key named like an entry but without a lease
// under an etcd lock, as `etcdctl put appcfg/feature/1234abcd` does beside
// a lock "appcfg/feature": once taken for a contender that never leaves,
// it made run wait for ever and clean --apply delete the user's key. Run
// must get the lock, inspect must flag the key foreign and say why (no
// lease; etcdctl lock waits behind it), and clean --apply must leave it.
func TestLeaselessKeyEtcd(t *testing.T) {
	url := etcdURL(t)
	cli := rawEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := lockName(t)
	key := name + "/1234abcd"
	if _, err := cli.Put(ctx, key, "user-data"); err != nil {
		t.Fatal(err)
	}
	defer cli.Delete(context.Background(), key)

	if r := runBaton(t, nil, "run", "--backend", url, "--wait", "3s", name, "--", "true"); r.code != 0 {
		t.Errorf("run behind a key without a lease exit = %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	d, r := inspectJSON(t, nil, url, name)
	if q := d.entries(); len(q) != 1 || !q[0].Foreign || q[0].Dead || !strings.HasPrefix(q[0].Owner, "1234abcd@") {
		t.Errorf("inspect --json = %s, want the one key 1234abcd flagged foreign, not dead", r.stdout)
	}
	r = runBaton(t, nil, "inspect", "--backend", url, name)
	if r.code != 0 || !strings.Contains(r.stdout, "foreign") || !strings.Contains(r.stdout, "no lease") ||
		!strings.Contains(r.stdout, "etcdctl lock") {
		t.Errorf("inspect table (exit %d) does not say the key is foreign for want of a lease:\n%s", r.code, r.stdout)
	}
	r = runBaton(t, nil, "clean", "--backend", url, "--apply", name)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to clean") {
		t.Errorf("clean --apply (exit %d) offers to remove the key:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, err := cli.Get(ctx, key); err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "user-data" {
		t.Errorf("after clean --apply Get(%q) = %v, %v; want the user's key intact", key, got, err)
	}
}
