package main_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestInspectForeignEtcd puts a key under an etcd lock that no recipe
// writes (a signed suffix, which a lax parser once read as a queue entry
// that blocked the lock invisibly): inspect must flag it foreign, in the
// table and in the JSON, and clean must not count it as removable.
func TestInspectForeignEtcd(t *testing.T) {
	url := etcdURL(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdSrv.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("clientv3.New() = %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := "inspect-foreign-" + time.Now().Format("150405.000000")
	if _, err := cli.Put(ctx, name+"/-1", ""); err != nil {
		t.Fatal(err)
	}
	defer cli.Delete(context.Background(), name+"/-1")

	r := runBaton(t, nil, "inspect", "--backend", url, "--json", name)
	if r.code != 0 {
		t.Fatalf("inspect --json exit = %d; stderr:\n%s", r.code, r.stderr)
	}
	var q []struct {
		Entry   string `json:"entry"`
		Foreign bool   `json:"foreign"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &q); err != nil {
		t.Fatalf("inspect --json output %q: %v", r.stdout, err)
	}
	if len(q) != 1 || !q[0].Foreign {
		t.Fatalf("inspect --json = %s, want the one key flagged foreign", r.stdout)
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
