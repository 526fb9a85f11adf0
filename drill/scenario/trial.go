package scenario

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/drill"
	"github.com/baton-go/baton/faultproxy"
)

// trial is one run of one scenario: its lock name, history, resource and
// everything it started, which close stops in an order that lets each
// part end cleanly (children, then the proxies healed, then the work
// goroutines, then leases, clients, observers and proxies).
type trial struct {
	t     Target
	spec  spec
	index int
	seed  uint64
	rand  *rand.Rand
	name  string // the lock name, normalised
	herd  int

	ctx    context.Context // cancelled by close (and by Run's context)
	cancel context.CancelFunc

	rec     *drill.Recorder
	file    *os.File
	history string // path of the history file

	fenced, unfenced *drill.Counter
	dbPath           string

	work sync.WaitGroup // goroutines of the scenario; each releases what it took
	obs  sync.WaitGroup // lease observers; end with their leases

	mu       sync.Mutex
	children []*child
	proxies  []*faultproxy.Proxy
	clients  []Client
	leases   []held   // in-process grants not yet released
	vs       []string // violations
}

// violate records a broken invariant (or a drill that could not do what
// it had to: inv "drill").
func (tr *trial) violate(inv, format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.vs = append(tr.vs, inv+": "+fmt.Sprintf(format, args...))
}

func (tr *trial) violations() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.vs...)
}

// fault records the injection of a fault by client ("" for several):
// kind is the timeline's mark ("pause", "kill", "cut", "cancel",
// "release"), detail says what exactly. It returns the healing's record.
func (tr *trial) fault(client, kind, detail string) (heal func()) {
	return tr.rec.Fault(client, kind+": "+detail)
}

// startProxies puts a fault proxy in front of every server of the target
// and returns the addresses a client dials instead.
func (tr *trial) startProxies() ([]string, error) {
	var dial []string
	for _, a := range tr.t.Addrs {
		p, err := faultproxy.Start(a)
		if err != nil {
			return nil, err
		}
		tr.mu.Lock()
		tr.proxies = append(tr.proxies, p)
		tr.mu.Unlock()
		dial = append(dial, p.Addr)
	}
	return dial, nil
}

// eachProxy applies f to every proxy.
func (tr *trial) eachProxy(f func(*faultproxy.Proxy) error) error {
	tr.mu.Lock()
	ps := append([]*faultproxy.Proxy(nil), tr.proxies...)
	tr.mu.Unlock()
	var errs []error
	for _, p := range ps {
		errs = append(errs, f(p))
	}
	return errors.Join(errs...)
}

func (tr *trial) healProxies() {
	_ = tr.eachProxy(func(p *faultproxy.Proxy) error { p.Heal(); return p.Accept() })
}

// held is an in-process grant and the actor it belongs to.
type held struct {
	id string
	l  *baton.Lease
}

// actor is an in-process client of a trial: its acquires, releases and
// lease states go into the history under id.
type actor struct {
	tr *trial
	id string
	c  Client
	m  baton.Locker
}

// open connects an in-process client of the trial's lock (dial as for
// Target.Open).
func (tr *trial) open(id string, dial []string) (*actor, error) {
	c, err := tr.t.Open(tr.ctx, dial)
	if err != nil {
		return nil, fmt.Errorf("%s: open: %w", id, err)
	}
	tr.mu.Lock()
	tr.clients = append(tr.clients, c)
	tr.mu.Unlock()
	return tr.on(id, c)
}

// on is an actor on an open client: several actors may share one.
func (tr *trial) on(id string, c Client) (*actor, error) {
	m, err := c.Mutex(tr.name)
	if err != nil {
		return nil, fmt.Errorf("%s: mutex: %w", id, err)
	}
	return &actor{tr: tr, id: id, c: c, m: m}, nil
}

// lock acquires, records it, and records every later state of the lease.
func (a *actor) lock(ctx context.Context) (*baton.Lease, error) {
	rec := a.tr.rec
	op := rec.Begin(a.id, drill.OpAcquire, a.tr.name, 0)
	l, err := a.m.Lock(ctx)
	if err != nil {
		op.Fail(err) // the contract: an error means not holding
		return nil, err
	}
	op.End(drill.Ok, func(e *drill.Event) { e.Token, e.Entry = l.Token(), l.Owner() })
	a.tr.mu.Lock()
	a.tr.leases = append(a.tr.leases, held{a.id, l})
	a.tr.mu.Unlock()
	a.tr.obs.Add(1)
	go func() { // owner: the lease; ends when it does
		defer a.tr.obs.Done()
		observe(rec, a.id, l)
	}()
	return l, nil
}

// observe records l's states until it ends.
func observe(rec *drill.Recorder, client string, l *baton.Lease) {
	st, ch := l.Observe()
	for !st.Ended() { // the lease may have ended before this ran
		<-ch
		st, ch = l.Observe()
		rec.Record(drill.Event{Client: client, Op: drill.OpState, Phase: drill.Info, Name: l.Name(), Token: l.Token(), Detail: st.String()})
	}
}

// release releases l and records it; a failed release has an unknown
// outcome (it may have been applied).
func (a *actor) release(ctx context.Context, l *baton.Lease) error {
	op := a.tr.rec.Begin(a.id, drill.OpRelease, l.Name(), l.Token())
	err := l.Release(ctx)
	if err != nil {
		op.Unknown(err)
	} else {
		op.Ok()
		a.tr.forget(l)
	}
	return err
}

func (tr *trial) forget(l *baton.Lease) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for i, x := range tr.leases {
		if x.l == l {
			tr.leases = append(tr.leases[:i], tr.leases[i+1:]...)
			return
		}
	}
}

// increment is one read-modify-write of both counters under l.
func (a *actor) increment(ctx context.Context, l *baton.Lease) error {
	ferr := a.tr.fenced.Increment(ctx, a.tr.rec, a.id, l.Token(), l.Owner())
	uerr := a.tr.unfenced.Increment(ctx, a.tr.rec, a.id, l.Token(), l.Owner())
	return errors.Join(ferr, uerr)
}

// goWork runs f on a goroutine owned by the trial: close waits for it.
func (tr *trial) goWork(f func()) {
	tr.work.Go(f)
}

// waitQueued waits until n clients hold or wait for the lock. A lease
// engine's waiters hold nothing on the server, so there the wait is for
// the holder's row or key, then settle for the waiters' first attempts.
func (tr *trial) waitQueued(n int) error {
	if tr.t.Family == Lease && n > 1 {
		n = 1
		defer tr.sleep(settle)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		es, err := tr.t.Scan(tr.ctx, tr.name)
		if err == nil && len(es) >= n {
			return nil
		}
		if tr.ctx.Err() != nil {
			return tr.ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("queue of %q: %d entries (scan error %v), want ≥ %d", tr.name, len(es), err, n)
		}
		tr.sleep(10 * time.Millisecond)
	}
}

// settle is how long a lease engine's waiters, once started, get to make
// their first attempts before a fault: nothing on the server shows that
// they wait.
const settle = 300 * time.Millisecond

// sleep waits d or until the trial ends.
func (tr *trial) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-tr.ctx.Done():
	}
}

// sweep takes the lock once and releases it, so that what a killed or
// frozen holder of an interrupted trial left — a lease engine's expired
// row or key, which stays listed until someone takes the lock over — is
// gone. Only an interrupted trial is swept: a trial that ran to its end
// always hands the lock on, so what is left after it is an orphan.
func (tr *trial) sweep(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*tr.t.TTL)
	defer cancel()
	es, err := tr.t.Scan(sctx, tr.name)
	if err != nil || len(es) == 0 {
		return
	}
	c, err := tr.t.Open(sctx, nil)
	if err != nil {
		return
	}
	defer c.Close()
	m, err := c.Mutex(tr.name)
	if err != nil {
		return
	}
	if l, err := m.Lock(sctx); err == nil {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), tr.t.TTL)
		_ = l.Release(rctx)
		rcancel()
	}
}

// close stops everything the trial started. The proxies are healed
// first, so that releases and client closes reach the servers; then the
// children stop (a running one releases its lease, a frozen one is thawed
// and killed), then the work goroutines (which release their own
// grants), then what is still held, the clients, the lease observers,
// and the proxies.
func (tr *trial) close() {
	tr.cancel()
	tr.healProxies()
	tr.mu.Lock()
	children := tr.children
	tr.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Go(c.stop)
	}
	wg.Wait()
	tr.work.Wait()
	tr.mu.Lock()
	leases, clients, proxies := tr.leases, tr.clients, tr.proxies
	tr.leases = nil
	tr.mu.Unlock()
	for _, h := range leases {
		ctx, cancel := context.WithTimeout(context.Background(), tr.t.TTL)
		op := tr.rec.Begin(h.id, drill.OpRelease, h.l.Name(), h.l.Token())
		if err := h.l.Release(ctx); err != nil {
			op.Unknown(err)
		} else {
			op.Ok()
		}
		cancel()
	}
	for _, c := range clients {
		_ = c.Close()
	}
	tr.obs.Wait()
	for _, p := range proxies {
		p.Close()
	}
	tr.file.Close()
}
