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

// brokenEnv marks the child process of the negative controls: there each
// control runs its broken engine under the suite instead of starting a
// child.
const brokenEnv = "BATONTEST_BROKEN_ENGINE"

// TestSuiteCatchesViolations is the suite's negative control: it runs the
// suite against etcdlock wrapped so that it breaks three invariants on
// purpose, in a child process, and checks that the suite fails and names
// each of them. A suite that passed a broken engine would prove nothing.
func TestSuiteCatchesViolations(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		brokenEngine(t)
		return
	}
	suiteFailsInChild(t, "^TestSuiteCatchesViolations$/^(InvalidNames|MutualExclusion|CancelWhileWaiting)$",
		`etcd-broken: names: Mutex("a//b")`,
		"etcd-broken: mutual exclusion (I1)",
		"etcd-broken: context (I6)")
}

// suiteFailsInChild runs this test binary again with brokenEnv set and
// -test.run=run, and checks that it fails with each of wants in its output.
func suiteFailsInChild(t *testing.T, run string, wants ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.count=1", "-test.run="+run)
	cmd.Env = append(os.Environ(), brokenEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed an engine that breaks the contract; output:\n%s", out)
	}
	for _, want := range wants {
		if !strings.Contains(string(out), want) {
			t.Errorf("suite output lacks %q; output:\n%s", want, out)
		}
	}
}

// brokenEngine is the child half of TestSuiteCatchesViolations.
func brokenEngine(t *testing.T) {
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

// TestSuiteCatchesRecipeViolations is the negative control of the recipe
// suites: etcdlock's recipes, wrapped so that each breaks one invariant,
// must fail the suites with the invariant named.
func TestSuiteCatchesRecipeViolations(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		brokenRecipeSuites(t)
		return
	}
	suiteFailsInChild(t, "^TestSuiteCatchesRecipeViolations$/^(RW|Semaphore|Election)$/^(QueueOrder|TryAcquire|ResignOrder)$",
		"etcd-broken: reader never overtakes a queued writer",
		"etcd-broken: writer waits for earlier readers",
		"etcd-broken: at most N holders",
		"etcd-broken: resign order")
}

// brokenRecipeSuites is the child half of TestSuiteCatchesRecipeViolations.
func brokenRecipeSuites(t *testing.T) {
	e := etcdTestEngine(t)
	newClient := e.NewClient
	e.Name = "etcd-broken"
	e.NewClient = func(t testing.TB) batontest.Client {
		return &brokenRecipes{recipeClient: newClient(t).(recipeClient)}
	}
	t.Run("RW", func(t *testing.T) { batontest.TestRWMutex(t, e) })
	t.Run("Semaphore", func(t *testing.T) { batontest.TestSemaphore(t, e) })
	t.Run("Election", func(t *testing.T) { batontest.TestElection(t, e) })
}

// brokenRecipes hands out a read/write lock whose readers take a shadow
// lock (so they ignore writers), semaphores with one permit too many, and
// leaders that release before they drain.
type brokenRecipes struct{ recipeClient }

// recipeClient is a suite client with every recipe, as
// batontest.FromClient returns it.
type recipeClient interface {
	batontest.RWClient
	batontest.SemClient
	batontest.ElectClient
}

func (c *brokenRecipes) RWMutex(name string) (batontest.RW, error) {
	m, err := c.recipeClient.RWMutex(name)
	if err != nil {
		return nil, err
	}
	shadow, err := c.recipeClient.RWMutex(name + "/shadow")
	if err != nil {
		return nil, err
	}
	return brokenRW{RW: m, shadow: shadow}, nil
}

type brokenRW struct {
	batontest.RW
	shadow batontest.RW
}

func (m brokenRW) RLock(ctx context.Context) (*baton.Lease, error)    { return m.shadow.RLock(ctx) }
func (m brokenRW) TryRLock(ctx context.Context) (*baton.Lease, error) { return m.shadow.TryRLock(ctx) }

func (c *brokenRecipes) Semaphore(name string, n int) (batontest.Sem, error) {
	return c.recipeClient.Semaphore(name, n+1)
}

func (c *brokenRecipes) Election(name string) (batontest.Elect, error) {
	el, err := c.recipeClient.Election(name)
	if err != nil {
		return nil, err
	}
	return brokenElection{el}, nil
}

type brokenElection struct{ batontest.Elect }

func (e brokenElection) Campaign(ctx context.Context) (batontest.Leadership, error) {
	ld, err := e.Elect.Campaign(ctx)
	if err != nil {
		return nil, err
	}
	return brokenLeader{ld}, nil
}

type brokenLeader struct{ batontest.Leadership }

// Resign releases first and drains afterwards: the next leader runs while
// this one still works.
func (l brokenLeader) Resign(ctx context.Context, p batontest.ResignPlan) error {
	epoch := l.Epoch()
	err := l.Leadership.Resign(ctx, batontest.ResignPlan{})
	if p.Drain != nil {
		_ = p.Drain(ctx)
	}
	if p.Checkpoint != nil {
		_ = p.Checkpoint(ctx, epoch)
	}
	return err
}
