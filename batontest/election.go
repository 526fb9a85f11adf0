package batontest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-go/baton"
)

// ResignPlan is the orderly hand-over the suite asks a leader for: stop
// taking work, drain in-flight work within DrainTimeout, checkpoint with
// the epoch, then release leadership, in that order. It is the
// contract's, so a *baton.Leader is a Leadership as it is.
type ResignPlan = baton.ResignPlan

var _ Leadership = (*baton.Leader)(nil)

// ElectorOf adapts an engine's baton.Elector to Elect. name picks the
// string that names a leadership, unique to it: a queue engine's entry
// (Candidate.Entry), a lease engine's grant owner (Candidate.Session).
func ElectorOf(e baton.Elector, name func(baton.Candidate) string) Elect {
	return elector{e: e, name: name}
}

type elector struct {
	e    baton.Elector
	name func(baton.Candidate) string
}

func (e elector) Campaign(ctx context.Context) (Leadership, error) {
	ld, err := e.e.Campaign(ctx)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return ld, nil
}

func (e elector) Leader(ctx context.Context) (string, error) {
	c, err := e.e.Leader(ctx)
	if err != nil {
		return "", err
	}
	return e.name(c), nil
}

// Observe relays the engine's candidates as names. The relay goroutine is
// owned by ctx: it ends when the engine closes its channel, which it does
// when ctx ends.
func (e elector) Observe(ctx context.Context) (<-chan string, error) {
	in, err := e.e.Observe(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan string)
	go func() {
		defer close(out)
		for c := range in {
			select {
			case out <- e.name(c):
			case <-ctx.Done():
				for range in { // let the engine's goroutine finish
				}
				return
			}
		}
	}()
	return out, nil
}

// Leadership is a won election as the suite sees it.
type Leadership interface {
	// Epoch is the leadership's fencing token, greater than every earlier
	// leader's.
	Epoch() uint64
	// Context is cancelled when leadership ends: with a cause wrapping
	// baton.ErrLost when it is lost, baton.ErrReleased after Resign.
	Context() context.Context
	// Accepting reports whether the leader may take new work now (held,
	// not suspended, not resigning).
	Accepting() bool
	// Admit returns nil while the leader may take new work, an error
	// wrapping baton.ErrResigning once Resign began, one wrapping
	// baton.ErrLost once leadership is lost.
	Admit(ctx context.Context) error
	// Resign runs plan in order and then releases leadership, whatever the
	// steps returned.
	Resign(ctx context.Context, plan ResignPlan) error
}

// Elect is a leader election as the suite sees it.
type Elect interface {
	// Campaign blocks until this candidate leads or ctx ends.
	Campaign(ctx context.Context) (Leadership, error)
	// Leader names the current leader, or fails with an error wrapping
	// baton.ErrNoLeader. The name stays the same for as long as one
	// leadership lasts and differs between the leaderships of different
	// clients.
	Leader(ctx context.Context) (string, error)
	// Observe sends the current leader's name (as Leader returns it; ""
	// while there is none) and then each change, until ctx ends; then it
	// closes the channel.
	Observe(ctx context.Context) (<-chan string, error)
}

// ElectClient is a Client whose engine has leader election. TestElection
// skips an engine whose Client does not implement it.
type ElectClient interface {
	Client
	// Election returns the election called name; an invalid name fails
	// with an error wrapping baton.ErrInvalidName.
	Election(name string) (Elect, error)
}

// TestElection runs the leader election conformance subtests against e.
// It skips, saying so, when e's clients do not implement ElectClient.
func TestElection(t *testing.T, e Engine) {
	t.Helper()
	s := newSuite(t, e)
	if _, ok := s.client(t).(ElectClient); !ok {
		t.Skipf("%s: Client does not implement batontest.ElectClient: no election to test", e.Name)
	}
	runAll(t, []subtest{
		{"InvalidName", s.testElectInvalidName},
		{"SingleLeader", s.testElectSingleLeader},
		{"ResignOrder", s.testElectResignOrder},
		{"DrainBound", s.testElectDrainBound},
		{"CancelCampaign", s.testElectCancel},
		{"Observe", s.testElectObserve},
		{"LeaderKilled", s.testElectKilled},
	})
}

// election returns a new client's election called name, and the client.
func (s *suite) election(t *testing.T, name string) (Elect, Client) {
	t.Helper()
	c, ok := s.client(t).(ElectClient)
	if !ok {
		s.fatalf(t, "ElectClient", "NewClient returned a %T, which lacks Election", c)
	}
	el, err := c.Election(name)
	if err != nil || el == nil {
		s.fatalf(t, "valid name", "Election(%q) = %v, %v, want an election", name, el, err)
	}
	return el, c
}

// campaignResult is what an asynchronous Campaign returned.
type campaignResult struct {
	ld    Leadership
	err   error
	at    time.Time
	probe bool // probe's answer right after Campaign returned
}

// campaign is a Campaign running in its own goroutine. Its owner is the
// test: Cleanup cancels it, waits for it and resigns a leadership it may
// have won.
type campaign struct {
	cancel context.CancelFunc
	ch     chan campaignResult
	res    *campaignResult
}

// campaignAsync starts el.Campaign(ctx) in a goroutine; probe, if set,
// runs right after Campaign returns.
func (s *suite) campaignAsync(t *testing.T, ctx context.Context, el Elect, probe func() bool) *campaign {
	ctx, cancel := context.WithCancel(ctx)
	c := &campaign{cancel: cancel, ch: make(chan campaignResult, 1)}
	go func() {
		ld, err := el.Campaign(ctx)
		r := campaignResult{ld: ld, err: err, at: time.Now()}
		if probe != nil {
			r.probe = probe()
		}
		c.ch <- r
	}()
	t.Cleanup(func() {
		cancel()
		r, ok := c.wait(30 * time.Second)
		if !ok {
			t.Errorf("%s: context: Campaign still running 30s after its context was cancelled", s.e.Name)
			return
		}
		if r.ld != nil && r.ld.Context().Err() == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = r.ld.Resign(ctx, ResignPlan{}) // tidying up after a failed check; the check reported already
		}
	})
	return c
}

// wait returns the Campaign's result, or false if it has not returned
// within d. Test goroutine only.
func (c *campaign) wait(d time.Duration) (campaignResult, bool) {
	if c.res != nil {
		return *c.res, true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-c.ch:
		c.res = &r
		return r, true
	case <-t.C:
		return campaignResult{}, false
	}
}

// campaignNow wins an election nobody leads, or stops the test.
func (s *suite) campaignNow(t *testing.T, el Elect, name string) Leadership {
	t.Helper()
	ld, err := el.Campaign(opCtx(t, 10*time.Second))
	if err != nil || ld == nil {
		s.fatalf(t, "campaign", "Campaign(%q) on an election nobody leads = %v, %v, want leadership", name, ld, err)
	}
	s.checkLeader(t, ld, name)
	return ld
}

// checkLeader checks what every new leadership carries.
func (s *suite) checkLeader(t *testing.T, ld Leadership, name string) {
	t.Helper()
	if err := ld.Context().Err(); err != nil {
		s.errorf(t, "leadership", "new leadership of %q: Context().Err() = %v, want nil", name, err)
	}
	if !ld.Accepting() {
		s.errorf(t, "leadership", "new leadership of %q: Accepting() = false, want true", name)
	}
	if err := ld.Admit(opCtx(t, 5*time.Second)); err != nil {
		s.errorf(t, "leadership", "new leadership of %q: Admit() = %v, want nil", name, err)
	}
	if ld.Epoch() == 0 {
		s.errorf(t, "epoch", "new leadership of %q: Epoch() = 0, want a token", name)
	}
}

// resign resigns ld with an empty plan and checks that leadership ended.
func (s *suite) resign(t *testing.T, ld Leadership) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ld.Resign(ctx, ResignPlan{}); err != nil {
		s.errorf(t, "resign", "Resign() = %v, want nil", err)
	}
	s.checkResigned(t, ld)
}

// checkResigned checks a leadership after Resign returned.
func (s *suite) checkResigned(t *testing.T, ld Leadership) {
	t.Helper()
	if ld.Context().Err() == nil {
		s.errorf(t, "resign", "leadership's Context().Err() after Resign = nil, want cancelled")
	} else if cause := context.Cause(ld.Context()); !errors.Is(cause, baton.ErrReleased) {
		s.errorf(t, "resign", "context.Cause of a resigned leadership = %v, want %v", cause, baton.ErrReleased)
	}
	if ld.Accepting() {
		s.errorf(t, "resign", "Accepting() after Resign = true, want false")
	}
	if err := ld.Admit(opCtx(t, 5*time.Second)); err == nil {
		s.errorf(t, "resign", "Admit() after Resign = nil, want an error")
	}
}

func (s *suite) testElectInvalidName(t *testing.T) {
	c, _ := s.client(t).(ElectClient)
	for _, name := range []string{"", "a//b", "../x", "a\x00b"} {
		if el, err := c.Election(name); !errors.Is(err, baton.ErrInvalidName) {
			s.errorf(t, "names", "Election(%q) = %v, %v, want an error wrapping %v", name, el, err, baton.ErrInvalidName)
		}
	}
}

// testElectSingleLeader runs four candidates at once and resigns each
// winner in turn: exactly one leads at a time, each new leader's epoch
// exceeds the last, and Leader names each in turn.
func (s *suite) testElectSingleLeader(t *testing.T) {
	const candidates = 4
	name := lockName("elect-single")
	els := make([]Elect, candidates)
	for i := range els {
		els[i], _ = s.election(t, name)
	}
	if id, err := els[0].Leader(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNoLeader) {
		s.errorf(t, "no leader", "Leader() of an election nobody entered = %q, %v, want an error wrapping %v", id, err, baton.ErrNoLeader)
	}
	// Wins arrive on one channel so the test sees them in the order they
	// happen. Cleanup cancels the campaigns still running, waits for them
	// and resigns what they won after the test stopped looking.
	type win struct {
		i   int
		ld  Leadership
		err error
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	wins := make(chan win, candidates)
	var wg sync.WaitGroup
	for i, el := range els {
		wg.Go(func() {
			ld, err := el.Campaign(ctx)
			wins <- win{i, ld, err}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		close(wins)
		for w := range wins {
			if w.ld != nil && w.ld.Context().Err() == nil {
				rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = w.ld.Resign(rctx, ResignPlan{}) // tidying up after a failed check
				rcancel()
			}
		}
	})

	var (
		lastEpoch uint64
		seen      []string
	)
	for round := range candidates {
		var w win
		select {
		case w = <-wins:
		case <-time.After(10 * time.Second):
			s.fatalf(t, "progress", "round %d: no candidate leads 10s after the previous leader resigned", round)
		}
		if w.err != nil || w.ld == nil {
			s.fatalf(t, "campaign", "round %d: candidate %d's Campaign = %v, %v, want leadership", round, w.i, w.ld, w.err)
		}
		ld := w.ld
		s.checkLeader(t, ld, name)
		select {
		case other := <-wins:
			s.errorf(t, "single leader", "round %d: candidate %d's Campaign returned (%v) while candidate %d leads (epoch %d)", round, other.i, other.err, w.i, ld.Epoch())
			if other.ld != nil {
				s.resign(t, other.ld)
			}
		case <-time.After(300 * time.Millisecond):
		}
		if ld.Epoch() <= lastEpoch {
			s.errorf(t, "epochs increase", "round %d: epoch %d after %d", round, ld.Epoch(), lastEpoch)
		}
		lastEpoch = ld.Epoch()
		id, err := els[w.i].Leader(opCtx(t, 5*time.Second))
		switch {
		case err != nil || id == "":
			s.errorf(t, "leader reported", "round %d: Leader() while candidate %d leads = %q, %v, want its name", round, w.i, id, err)
		case slices.Contains(seen, id):
			s.errorf(t, "leader reported", "round %d: Leader() = %q, the name of an earlier leader who resigned", round, id)
		}
		seen = append(seen, id)
		if other, err := els[(w.i+1)%candidates].Leader(opCtx(t, 5*time.Second)); err != nil || other != id {
			s.errorf(t, "leader reported", "round %d: another candidate's Leader() = %q, %v, want %q", round, other, err, id)
		}
		s.resign(t, ld)
	}
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q after every leader resigned = %q, want none", name, got)
	}
	if id, err := els[0].Leader(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNoLeader) {
		s.errorf(t, "no leader", "Leader() after every leader resigned = %q, %v, want an error wrapping %v", id, err, baton.ErrNoLeader)
	}
}

// testElectResignOrder checks the hand-over order: Admit fails with
// ErrResigning from the start, Drain runs, then Checkpoint with the epoch,
// and only then may the next candidate lead.
func (s *suite) testElectResignOrder(t *testing.T) {
	name := lockName("elect-resign")
	el1, _ := s.election(t, name)
	el2, _ := s.election(t, name)
	ld := s.campaignNow(t, el1, name)
	next := s.campaignAsync(t, t.Context(), el2, nil)
	s.awaitCount(t, s.entries, name, 2)

	var (
		mu    sync.Mutex
		steps []string
	)
	step := func(st string) {
		mu.Lock()
		steps = append(steps, st)
		mu.Unlock()
	}
	// During each step the resigning leader must still hold leadership
	// (its context alive) and nobody else may lead. Both steps run on
	// Resign's goroutine, this test's, so the checks may use s.errorf.
	during := func(step string) {
		if err := ld.Admit(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrResigning) {
			s.errorf(t, "resign order", "Admit() during %s = %v, want an error wrapping %v (no new work once Resign began)", step, err, baton.ErrResigning)
		}
		if ld.Accepting() {
			s.errorf(t, "resign order", "Accepting() during %s = true, want false", step)
		}
		if err := ld.Context().Err(); err != nil {
			s.errorf(t, "resign order", "leadership's Context() during %s = %v, want alive (release comes last)", step, err)
		}
		if r, ok := next.wait(100 * time.Millisecond); ok {
			s.errorf(t, "resign order", "next candidate's Campaign returned (%v) during %s, before the leader released", r.err, step)
		}
	}
	plan := ResignPlan{
		Drain: func(ctx context.Context) error {
			step("drain")
			if _, ok := ctx.Deadline(); !ok {
				s.errorf(t, "resign order", "Drain's context has no deadline, want one DrainTimeout away")
			}
			during("Drain")
			return nil
		},
		DrainTimeout: 5 * time.Second,
		Checkpoint: func(ctx context.Context, epoch uint64) error {
			step("checkpoint")
			if epoch != ld.Epoch() {
				s.errorf(t, "resign order", "Checkpoint got epoch %d, want the leader's %d", epoch, ld.Epoch())
			}
			during("Checkpoint")
			return nil
		},
	}
	if !ld.Accepting() {
		s.errorf(t, "leadership", "Accepting() before Resign = false, want true")
	}
	rctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	err := ld.Resign(rctx, plan)
	resigned := time.Now()
	if err != nil {
		s.errorf(t, "resign", "Resign(plan) = %v, want nil", err)
	}
	if got := []string{"drain", "checkpoint"}; !slices.Equal(steps, got) {
		s.errorf(t, "resign order", "Resign ran %v, want %v", steps, got)
	}
	s.checkResigned(t, ld)
	r, ok := next.wait(s.cleanupBound())
	switch {
	case !ok:
		s.fatalf(t, "progress", "next candidate not leading %v after Resign returned", s.cleanupBound())
	case r.err != nil:
		s.fatalf(t, "progress", "next candidate's Campaign = %v, want leadership", r.err)
	}
	t.Logf("%s: next candidate leads %v after Resign returned", s.e.Name, r.at.Sub(resigned).Round(time.Millisecond))
	s.checkLeader(t, r.ld, name)
	if r.ld.Epoch() <= ld.Epoch() {
		s.errorf(t, "epochs increase", "next leader's epoch %d, want > %d", r.ld.Epoch(), ld.Epoch())
	}
	s.resign(t, r.ld)
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q after both resigned = %q, want none", name, got)
	}
}

// testElectDrainBound checks that a Drain that never finishes is cut off
// after DrainTimeout and leadership is released anyway, so a stuck task
// cannot keep the successor waiting.
func (s *suite) testElectDrainBound(t *testing.T) {
	const drainTimeout = 300 * time.Millisecond
	name := lockName("elect-drain")
	el1, _ := s.election(t, name)
	el2, _ := s.election(t, name)
	ld := s.campaignNow(t, el1, name)
	next := s.campaignAsync(t, t.Context(), el2, nil)
	s.awaitCount(t, s.entries, name, 2)
	var (
		checkpointed atomic.Bool
		drainEnded   atomic.Int64 // ns after start; 0: Drain never ran
	)
	start := time.Now()
	err := ld.Resign(opCtx(t, 20*time.Second), ResignPlan{
		Drain: func(ctx context.Context) error {
			<-ctx.Done() // a task that never finishes by itself
			drainEnded.Store(int64(time.Since(start)))
			return ctx.Err()
		},
		DrainTimeout: drainTimeout,
		Checkpoint: func(context.Context, uint64) error {
			checkpointed.Store(true)
			return nil
		},
	})
	t.Logf("%s: Resign with a stuck Drain returned after %v: %v", s.e.Name, time.Since(start).Round(time.Millisecond), err)
	switch d := time.Duration(drainEnded.Load()); {
	case d == 0:
		s.errorf(t, "resign order", "Resign did not run Drain, or Drain's context never ended")
	case d > drainTimeout+ReturnBound:
		s.errorf(t, "drain bound", "Drain's context ended %v after Resign began, want ≤ DrainTimeout %v + %v", d.Round(time.Millisecond), drainTimeout, ReturnBound)
	}
	if !checkpointed.Load() {
		s.errorf(t, "resign order", "Checkpoint did not run after a Drain that timed out")
	}
	s.checkResigned(t, ld)
	r, ok := next.wait(s.cleanupBound())
	switch {
	case !ok:
		s.fatalf(t, "progress", "next candidate not leading %v after Resign with a stuck Drain", s.cleanupBound())
	case r.err != nil:
		s.fatalf(t, "progress", "next candidate's Campaign = %v, want leadership", r.err)
	}
	s.resign(t, r.ld)
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q after both resigned = %q, want none", name, got)
	}
}

// testElectCancel checks that a waiting Campaign honours cancellation
// within ReturnBound and withdraws its candidacy.
func (s *suite) testElectCancel(t *testing.T) {
	name := lockName("elect-cancel")
	el1, _ := s.election(t, name)
	el2, _ := s.election(t, name)
	ld := s.campaignNow(t, el1, name)
	before := s.entries(t, name)
	c := s.campaignAsync(t, t.Context(), el2, nil)
	s.awaitCount(t, s.entries, name, len(before)+1)
	ended := time.Now()
	c.cancel()
	r, ok := c.wait(ReturnBound + 10*time.Second)
	switch {
	case !ok:
		s.fatalf(t, "context (I6)", "Campaign still waiting 10s after its context was cancelled")
	case r.at.Sub(ended) > ReturnBound:
		s.errorf(t, "context (I6)", "Campaign returned %v after its context was cancelled, want ≤ %v", r.at.Sub(ended).Round(time.Millisecond), ReturnBound)
	}
	if r.ld != nil || !errors.Is(r.err, context.Canceled) {
		s.errorf(t, "context", "cancelled Campaign = %v, %v, want an error wrapping %v", r.ld, r.err, context.Canceled)
	}
	if got, ok := s.awaitEntries(t, name, before, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind (CURATOR-79)", "entries after the cancelled Campaign = %q, want only the leader's %q", got, before)
	}
	if !ld.Accepting() {
		s.errorf(t, "leadership", "leader's Accepting() after a candidate gave up = false, want true")
	}
	s.resign(t, ld)
	if id, err := el2.Leader(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrNoLeader) {
		s.errorf(t, "no leader", "Leader() after the leader resigned and the only other candidate withdrew = %q, %v, want %v", id, err, baton.ErrNoLeader)
	}
	if got, ok := s.awaitEntries(t, name, nil, s.cleanupBound()); !ok {
		s.errorf(t, "no entry left behind", "entries of %q at the end = %q, want none", name, got)
	}
}

// observer collects what Observe sends. Its goroutine ends when the
// channel closes; the test owns it through ctx.
type observer struct {
	mu   sync.Mutex
	seen []string
	done chan struct{}
}

func (o *observer) last() (string, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) == 0 {
		return "", 0
	}
	return o.seen[len(o.seen)-1], len(o.seen)
}

func (o *observer) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.seen)
}

// testElectObserve checks that Leader and Observe follow the leadership
// through a campaign, a hand-over and the last resignation.
func (s *suite) testElectObserve(t *testing.T) {
	name := lockName("elect-observe")
	el1, _ := s.election(t, name)
	el2, _ := s.election(t, name)
	elo, _ := s.election(t, name)
	octx, ocancel := context.WithCancel(t.Context())
	defer ocancel()
	ch, err := elo.Observe(octx)
	if err != nil {
		s.fatalf(t, "observe", "Observe(%q) = %v, want a channel", name, err)
	}
	o := &observer{done: make(chan struct{})}
	go func() { // owned by this test: ends when ocancel closes the channel
		defer close(o.done)
		for id := range ch {
			o.mu.Lock()
			o.seen = append(o.seen, id)
			o.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ocancel()
		select {
		case <-o.done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: observe: Observe's channel still open 10s after its context was cancelled", s.e.Name)
		}
	})
	awaitSeen := func(want string, what string) {
		t.Helper()
		if !Eventually(s.cleanupBound(), func() bool { id, _ := o.last(); return id == want }) {
			s.errorf(t, "observe", "%s: Observe sent %q, want %q last within %v", what, o.all(), want, s.cleanupBound())
		}
	}
	time.Sleep(100 * time.Millisecond)
	if id, n := o.last(); n > 0 && id != "" {
		s.errorf(t, "observe", "Observe on an election nobody entered sent %q, want \"\" or nothing", id)
	}

	ld1 := s.campaignNow(t, el1, name)
	id1, err := el2.Leader(opCtx(t, 5*time.Second))
	if err != nil || id1 == "" {
		s.fatalf(t, "leader reported", "Leader() while candidate 1 leads = %q, %v, want its name", id1, err)
	}
	awaitSeen(id1, "first leader")
	next := s.campaignAsync(t, t.Context(), el2, nil)
	s.awaitCount(t, s.entries, name, 2)
	if id, err := elo.Leader(opCtx(t, 5*time.Second)); err != nil || id != id1 {
		s.errorf(t, "leader reported", "Leader() after a second candidate queued = %q, %v, want still %q", id, err, id1)
	}
	s.resign(t, ld1)
	r, ok := next.wait(s.cleanupBound())
	if !ok || r.err != nil {
		s.fatalf(t, "progress", "second candidate's Campaign after the first resigned = %v (returned: %v), want leadership within %v", r.err, ok, s.cleanupBound())
	}
	id2, err := elo.Leader(opCtx(t, 5*time.Second))
	if err != nil || id2 == "" || id2 == id1 {
		s.errorf(t, "leader reported", "Leader() after the hand-over = %q, %v, want the second leader's name (not %q)", id2, err, id1)
	}
	awaitSeen(id2, "second leader")
	s.resign(t, r.ld)
	if !Eventually(s.cleanupBound(), func() bool {
		_, err := elo.Leader(opCtx(t, 5*time.Second))
		return errors.Is(err, baton.ErrNoLeader)
	}) {
		s.errorf(t, "no leader", "Leader() after the last leader resigned: want an error wrapping %v within %v", baton.ErrNoLeader, s.cleanupBound())
	}
	awaitSeen("", "after the last leader resigned")
	seen := o.all()
	for i := 1; i < len(seen); i++ {
		if seen[i] == seen[i-1] {
			s.errorf(t, "observe", "Observe sent %q twice in a row (%q), want only changes", seen[i], seen)
			break
		}
	}
	t.Logf("%s: Observe sent %q", s.e.Name, seen)
	ocancel()
	select {
	case <-o.done:
	case <-time.After(ReturnBound + time.Second):
		s.errorf(t, "observe", "Observe's channel still open %v after its context was cancelled", ReturnBound+time.Second)
	}
}

// testElectKilled kills the leader's session: its context is cancelled
// with ErrLost, it stops accepting work before the next candidate leads
// (I7), and the next candidate leads within the session bound (I5) with a
// larger epoch.
func (s *suite) testElectKilled(t *testing.T) {
	name := lockName("elect-killed")
	el1, c1 := s.election(t, name)
	el2, _ := s.election(t, name)
	ld := s.campaignNow(t, el1, name)
	bound := s.lostBound()
	next := s.campaignAsync(t, opCtx(t, bound+30*time.Second), el2, ld.Accepting)
	s.awaitCount(t, s.entries, name, 2)
	if r, ok := next.wait(200 * time.Millisecond); ok {
		s.errorf(t, "single leader", "second candidate's Campaign returned (%v) while the first leads", r.err)
	}
	killed := time.Now()
	c1.Kill(t)
	lostIn := time.Duration(-1)
	select {
	case <-ld.Context().Done():
		lostIn = time.Since(killed)
	case <-time.After(bound + 10*time.Second):
	}
	switch {
	case lostIn < 0:
		s.errorf(t, "leadership lost", "leader's Context() not cancelled %v after Kill", bound+10*time.Second)
	case lostIn > bound:
		s.errorf(t, "leadership lost", "leader's Context() cancelled %v after Kill, want ≤ %v", lostIn.Round(time.Millisecond), bound)
	default:
		t.Logf("%s: leader's context cancelled %v after Kill", s.e.Name, lostIn.Round(time.Millisecond))
	}
	if lostIn >= 0 {
		if cause := context.Cause(ld.Context()); !errors.Is(cause, baton.ErrLost) {
			s.errorf(t, "leadership lost", "context.Cause of a lost leadership = %v, want an error wrapping %v", cause, baton.ErrLost)
		}
		if err := ld.Admit(opCtx(t, 5*time.Second)); !errors.Is(err, baton.ErrLost) {
			s.errorf(t, "leadership lost", "Admit() of a lost leader = %v, want an error wrapping %v", err, baton.ErrLost)
		}
		if ld.Accepting() {
			s.errorf(t, "leadership lost", "Accepting() of a lost leader = true")
		}
	}
	r, ok := next.wait(bound + 30*time.Second)
	switch {
	case !ok:
		s.fatalf(t, "progress (I5)", "next candidate not leading %v after the leader's session was killed", time.Since(killed).Round(time.Millisecond))
	case r.err != nil:
		s.fatalf(t, "progress (I5)", "next candidate's Campaign = %v, want leadership once the leader's session died", r.err)
	}
	leadIn := r.at.Sub(killed)
	t.Logf("%s: next candidate leads %v after Kill; old leader accepting then: %v", s.e.Name, leadIn.Round(time.Millisecond), r.probe)
	if leadIn > bound {
		s.errorf(t, "progress (I5)", "next candidate leads %v after Kill, want ≤ %v", leadIn.Round(time.Millisecond), bound)
	}
	if r.probe {
		s.errorf(t, "single leader (I7)", "old leader still Accepting() when the next candidate won (%v after Kill)", leadIn.Round(time.Millisecond))
	}
	s.checkLeader(t, r.ld, name)
	if r.ld.Epoch() <= ld.Epoch() {
		s.errorf(t, "epochs increase", "epoch after the leader was lost = %d, want > %d", r.ld.Epoch(), ld.Epoch())
	}
	if err := ld.Resign(opCtx(t, 5*time.Second), ResignPlan{}); !errors.Is(err, baton.ErrLost) {
		s.errorf(t, "leadership lost", "Resign() of a lost leader = %v, want an error wrapping %v", err, baton.ErrLost)
	}
	s.resign(t, r.ld)
	if got, ok := s.awaitEntries(t, name, nil, bound); !ok {
		s.errorf(t, "no entry left behind (I8)", "entries of %q after the dead session and the resignation = %q, want none", name, got)
	}
}
