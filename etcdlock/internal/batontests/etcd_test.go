package batontest_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/etcdlock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdTestEngine is etcdEngine with an admin client closed at the end of
// t, for the negative controls. The suites' own run on the server is
// testkit/conformance's etcd row, through baton.Open.
func etcdTestEngine(t *testing.T) batontest.Engine {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{etcdServer.Endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("clientv3.New(%q) = %v", etcdServer.Endpoint, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	admin, err := etcdlock.New(cli, etcdlock.Options{TTL: etcdTTL})
	if err != nil {
		t.Fatalf("etcdlock.New() = %v", err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	return etcdEngine(etcdServer.Endpoint, admin)
}

// TestEtcdMinimumTTL records what the etcd server does with a TTL
// below its minimum, since the suite's timing depends on it: the granted
// TTL must be etcdTTL.
func TestEtcdMinimumTTL(t *testing.T) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdServer.Endpoint}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("clientv3.New() = %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := cli.Grant(ctx, 1)
	if err != nil {
		t.Fatalf("Grant(1) = %v", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = cli.Revoke(ctx, resp.ID)
	}()
	t.Logf("Grant(TTL 1s) granted TTL %ds", resp.TTL)
	if got := time.Duration(resp.TTL) * time.Second; got != etcdTTL {
		t.Errorf("Grant(1).TTL = %v, want %v (the server minimum the suite's timing assumes)", got, etcdTTL)
	}
}
