package batontest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest"
	"github.com/baton-go/baton/etcdlock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// brokenEnv makes TestBrokenEngine run; only TestSuiteCatchesViolations
// sets it, in a child process.
const brokenEnv = "BATONTEST_BROKEN_ENGINE"

// TestSuiteCatchesViolations is the suite's negative control: it runs the
// suite against etcdlock wrapped so that it breaks three invariants on
// purpose, in a child process, and checks that the suite fails and names
// each of them. A suite that passed a broken engine would prove nothing.
func TestSuiteCatchesViolations(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("in the child process")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.count=1",
		"-test.run=^TestBrokenEngine$/^(InvalidNames|MutualExclusion|CancelWhileWaiting)$")
	cmd.Env = append(os.Environ(), brokenEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed an engine that breaks the contract; output:\n%s", out)
	}
	for _, want := range []string{
		`etcd-broken: names: Mutex("a//b")`,
		"etcd-broken: mutual exclusion (I1)",
		"etcd-broken: context (I6)",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("suite output lacks %q; output:\n%s", want, out)
		}
	}
}

// TestBrokenEngine is the child half of TestSuiteCatchesViolations.
func TestBrokenEngine(t *testing.T) {
	if os.Getenv(brokenEnv) == "" {
		t.Skip("run by TestSuiteCatchesViolations in a child process")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdServer.Endpoint}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("clientv3.New() = %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	admin, err := etcdlock.New(cli, etcdlock.Options{TTL: etcdTTL})
	if err != nil {
		t.Fatalf("etcdlock.New() = %v", err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	e := etcdEngine(etcdServer.Endpoint, admin)
	newClient := e.NewClient
	e.Name = "etcd-broken"
	e.NewClient = func(t testing.TB) batontest.Client {
		return &brokenClient{Client: newClient(t)}
	}
	batontest.TestMutex(t, e)
}

// brokenClient accepts one invalid name, and hands out mutexes that grant
// the client's second Lock on a shadow lock (no exclusion with the real
// holders) and return late from a cancelled wait.
type brokenClient struct {
	batontest.Client
	calls atomic.Int64
}

func (c *brokenClient) Mutex(name string) (baton.Locker, error) {
	if name == "a//b" {
		name = "conformance/broken/empty-segment-accepted"
	}
	m, err := c.Client.Mutex(name)
	if err != nil {
		return nil, err
	}
	shadow, err := c.Client.Mutex(name + "/shadow")
	if err != nil {
		return nil, err
	}
	return &brokenMutex{Locker: m, shadow: shadow, calls: &c.calls}, nil
}

type brokenMutex struct {
	baton.Locker
	shadow baton.Locker
	calls  *atomic.Int64
}

func (m *brokenMutex) Lock(ctx context.Context) (*baton.Lease, error) {
	if m.calls.Add(1) == 2 {
		return m.shadow.Lock(ctx)
	}
	l, err := m.Locker.Lock(ctx)
	if err != nil && ctx.Err() != nil {
		time.Sleep(400 * time.Millisecond) // returns late from a cancelled wait
	}
	return l, err
}
