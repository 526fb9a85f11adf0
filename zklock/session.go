package zklock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/internal/gopool"
	"github.com/go-zookeeper/zk"
)

// session is one ZooKeeper session: one go-zookeeper *zk.Conn that baton
// uses for as long as the session ID it first got stays valid, and never
// after. Its state is Waiting until the server granted the session, then
// Held ⇄ Suspended, then Lost (final).
type session struct {
	c    *Client
	conn *zk.Conn
	tr   *tracker

	mu        sync.Mutex
	id        int64       // the session ID first granted; 0 before
	idStr     string      // id as ZooKeeper prints it ("0x…"), set with id
	state     baton.State // Waiting, Held, Suspended or Lost
	changed   chan struct{}
	connected bool  // go-zookeeper reports the session established (StateHasSession)
	cause     error // why it was lost
	lost      chan struct{}

	// Goroutines started for this session (calls, watches, the watchdog and
	// the cleaner). shutdown waits for them after closing the connection,
	// which makes every pending go-zookeeper call return.
	gmu  sync.Mutex
	shut bool
	wg   sync.WaitGroup
	// Calls run on pool's workers, which keep their grown stacks between
	// calls (see gopool); stop ends them at shutdown.
	pool *gopool.Pool
	stop chan struct{}

	// Abandoned entries and creates of unknown result, removed by the
	// cleaner goroutine while the session lives.
	cmu     sync.Mutex
	orphans map[string]struct{}
	creates []*abandonedCreate
	wake    chan struct{}

	watches watchSet // data watches shared by the session's waiters
}

// abandonedCreate is a protected create whose caller left before its result
// was known (its context ended) or before recovery could resolve it.
type abandonedCreate struct {
	parent string // the lock directory
	prefix string // "_c_<uuid>-": every entry of that attempt starts with it
	op     *op[string]
}

func newSession(c *Client) *session {
	stop := make(chan struct{})
	return &session{
		pool:    gopool.New(stop, 8), // a few workers wait for the next call
		stop:    stop,
		c:       c,
		tr:      newTracker(),
		state:   baton.Waiting,
		changed: make(chan struct{}),
		lost:    make(chan struct{}),
		orphans: make(map[string]struct{}),
		wake:    make(chan struct{}, 1),
	}
}

// start connects. The event callback runs on go-zookeeper's own goroutines
// and never blocks: it only takes s.mu, which is never held across I/O.
func (s *session) start() error {
	hosts := zk.WithLogInfo(false) // go-zookeeper's own provider, unless TLS
	if s.c.opts.TLS != nil {
		hosts = zk.WithHostProvider(&namedHosts{})
	}
	conn, _, err := zk.Connect(s.c.servers, s.c.opts.SessionTimeout,
		zk.WithDialer(s.dial),
		zk.WithEventCallback(s.onEvent),
		zk.WithLogger(nopLogger{}),
		zk.WithLogInfo(false),
		hosts,
	)
	if err != nil {
		return err
	}
	s.conn = conn
	s.spawn(s.watchdog)
	s.spawn(s.cleaner)
	return nil
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// timeout is the session timeout the server enforces: the smallest one it
// negotiated on any connection of this session, else the requested one.
func (s *session) timeout() time.Duration {
	if n := s.tr.negotiated.Load(); n > 0 {
		return time.Duration(n)
	}
	return s.c.opts.SessionTimeout
}

// Thresholds on the age of the last proven contact (see tracker). The
// server cannot expire the session before lastAck+T. go-zookeeper pings
// every T/3, so a healthy session's age stays below T/3 plus a round trip.
// baton declares Suspended at T/2 (before go-zookeeper's own read timeout
// of 2/3·T drops the connection, so a partition healed quickly resumes
// without a reconnect) and Lost at T−T/10: the tenth of T is the margin for
// the watchdog's scheduling delay and for clock-rate drift between client
// and server.
func suspectAge(t time.Duration) time.Duration { return t / 2 }
func lostAge(t time.Duration) time.Duration    { return t - t/10 }

func (s *session) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return // node events reach their watch channels
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == baton.Lost {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		sid := s.tr.sessionID.Load()
		switch {
		case sid == 0:
		case s.id == 0:
			s.id, s.idStr, s.connected = sid, "0x"+strconv.FormatInt(sid, 16), true
			s.setLocked(baton.Held)
		case sid != s.id:
			// go-zookeeper silently opens a new session after expiry; the
			// old session's entries are gone with it.
			s.loseLocked(fmt.Errorf("zklock: session 0x%x expired (go-zookeeper opened 0x%x)", s.id, sid))
		default:
			s.connected = true
			if s.state == baton.Suspended && s.freshLocked(time.Now()) {
				s.setLocked(baton.Held)
			}
		}
	case zk.StateDisconnected:
		s.connected = false
		if s.state == baton.Held {
			s.setLocked(baton.Suspended)
		}
	case zk.StateExpired:
		if s.id != 0 {
			s.loseLocked(fmt.Errorf("zklock: session 0x%x expired", s.id))
		}
	case zk.StateAuthFailed:
		s.loseLocked(fmt.Errorf("zklock: session 0x%x: %w", s.id, baton.ErrAuth))
	}
}

func (s *session) freshLocked(now time.Time) bool {
	last, ok := s.tr.lastAckTime()
	return ok && now.Sub(last) < suspectAge(s.timeout())
}

func (s *session) setLocked(st baton.State) {
	s.state = st
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *session) loseLocked(cause error) {
	if s.state == baton.Lost {
		return
	}
	s.cause = cause
	s.setLocked(baton.Lost)
	close(s.lost)
}

// lose ends the session (the client then closes its connection).
func (s *session) lose(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseLocked(cause)
}

// watchdog turns the age of the last proven contact into Suspended, Held
// again, and Lost — Lost strictly before the server can expire the session,
// whatever go-zookeeper's connection state says. Owner: the session; it
// returns once the session is Lost.
func (s *session) watchdog() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if s.state == baton.Lost {
			s.mu.Unlock()
			return
		}
		changed := s.changed
		wait := time.Duration(-1)
		if s.id != 0 {
			t := s.timeout()
			last, _ := s.tr.lastAckTime()
			age := time.Since(last)
			switch {
			case age >= lostAge(t):
				s.loseLocked(fmt.Errorf("zklock: session 0x%x: no reply proves the server heard it within %v of its %v timeout; it may expire",
					s.id, age.Round(time.Millisecond), t))
				s.mu.Unlock()
				return
			case age >= suspectAge(t):
				if s.state == baton.Held {
					s.setLocked(baton.Suspended)
				}
				wait = lostAge(t) - age
			default:
				if s.state == baton.Suspended && s.connected {
					s.setLocked(baton.Held)
				}
				wait = suspectAge(t) - age
			}
			// While suspended, a fresh reply may bring the session back.
			s.tr.wantAck.Store(s.state == baton.Suspended)
		}
		s.mu.Unlock()
		var tc <-chan time.Time
		if wait >= 0 {
			timer.Reset(wait)
			tc = timer.C
		}
		select {
		case <-tc:
		case <-changed:
		case <-s.tr.acked:
		}
	}
}

// ID names the session as ZooKeeper does (hex).
func (s *session) ID() string { return s.idString() }

// idString is ID without an interface call; entries carry it as Owner, so
// it is formatted once per session rather than once per acquire.
func (s *session) idString() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id == 0 {
		return "0x0"
	}
	return s.idStr
}

// Observe returns the state and a channel closed at its next change.
func (s *session) Observe() (baton.State, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.changed
}

func (s *session) sessionID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// awaitHeld waits until the session is Held. It fails with ErrSessionLost
// once the session is lost, and with the context's error (plus
// ErrUnavailable while the session is in doubt) when ctx ends.
func (s *session) awaitHeld(ctx context.Context) error {
	for {
		st, changed := s.Observe()
		switch st {
		case baton.Held:
			return nil
		case baton.Lost:
			return s.lostErr()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return s.ctxErr(ctx)
		}
	}
}

func (s *session) lostErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cause != nil {
		return fmt.Errorf("%w: %w", baton.ErrSessionLost, s.cause)
	}
	return baton.ErrSessionLost
}

// ctxErr is the error for a call whose context ended: the context's error,
// marked ErrUnavailable when the session was in doubt at the time, or
// ErrSessionLost once the session is lost.
func (s *session) ctxErr(ctx context.Context) error {
	st, _ := s.Observe()
	switch st {
	case baton.Lost:
		return s.lostErr()
	case baton.Held:
		return ctx.Err()
	}
	return fmt.Errorf("%w: %w", baton.ErrUnavailable, ctx.Err())
}

// spawn runs f on a goroutine owned by the session, or reports false once
// the session has shut down.
func (s *session) spawn(f func()) bool {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	if s.shut {
		return false
	}
	s.wg.Go(f)
	return true
}

// runner is a call that spawnRun runs: an *op.
type runner interface{ run() }

// spawnRun is spawn for a call, on a worker of the session's pool: it
// takes the op itself, not a method value of it, so that handing a call
// to its goroutine costs one closure, not two.
func (s *session) spawnRun(r runner) bool {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	if s.shut {
		return false
	}
	s.wg.Add(1)
	s.pool.Go(func() {
		defer s.wg.Done()
		r.run()
	})
	return true
}

// shutdown closes the connection — the server then deletes the session's
// ephemeral entries at once if it can be reached, else it expires them —
// and waits for the session's goroutines. go-zookeeper's Close can take a
// few seconds against an unreachable server, so the client runs it on a
// goroutine of its own.
func (s *session) shutdown() {
	if s.conn != nil {
		s.conn.Close()
	}
	s.gmu.Lock()
	s.shut = true
	s.gmu.Unlock()
	s.wg.Wait()
	close(s.stop)
	s.pool.Wait()
}

// op is one go-zookeeper call. go-zookeeper takes no context, so the call
// runs on a goroutine owned by the session and the caller may leave when
// its context ends; the call itself ends when the server answers or the
// connection fails or is closed (at the latest when the session is shut
// down), so nothing outlives the session.
type op[T any] struct {
	done chan struct{}
	fn   func() (T, error) // the call; nil once it ran
	v    T
	err  error
}

// doneOp is an op that already ended with (v, err).
func doneOp[T any](v T, err error) *op[T] {
	o := &op[T]{done: make(chan struct{}), v: v, err: err}
	close(o.done)
	return o
}

func goOp[T any](s *session, fn func() (T, error)) *op[T] {
	o := &op[T]{done: make(chan struct{}), fn: fn}
	if !s.spawnRun(o) {
		o.run() // shut down: the closed connection answers at once
	}
	return o
}

// run makes the call and publishes its result.
func (o *op[T]) run() {
	fn := o.fn
	o.fn = nil
	o.v, o.err = fn()
	close(o.done)
}

// wait returns the call's result, or ctx's error if ctx ends first.
func (o *op[T]) wait(ctx context.Context) (T, error) {
	select {
	case <-o.done:
		return o.v, o.err
	default:
	}
	select {
	case <-o.done:
		return o.v, o.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// call runs fn and returns its result, or ctx's error as soon as ctx ends.
// A context that can never end (no Done channel) is waited for on the
// caller's goroutine: handing the call to another goroutine only to be
// able to leave early would cost two goroutine switches for nothing.
func call[T any](ctx context.Context, s *session, fn func() (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	if ctx.Done() == nil {
		return fn()
	}
	return goOp(s, fn).wait(ctx)
}

// direct reports whether a call under ctx may run on the caller's
// goroutine at once: ctx can never end (see call) and the session is Held
// (callIdem would not wait). The hot calls of an acquire and a release
// make their first attempt this way, without the closure callIdem takes,
// and hand the call to callIdem only when it must wait or retry.
func (s *session) direct(ctx context.Context) bool {
	if ctx.Done() != nil {
		return false
	}
	st, _ := s.Observe()
	return st == baton.Held
}

// callIdem runs an idempotent call (a read, a watch, an exact delete) until
// it gets an answer: when the connection breaks under it, it waits for the
// session to be Held again and repeats, so a waiter or a release rides out
// a short disconnection. It fails with ErrSessionLost once the session is
// lost and with ctx's error (plus ErrUnavailable while in doubt) when ctx
// ends.
func callIdem[T any](ctx context.Context, s *session, fn func() (T, error)) (T, error) {
	return retryIdem(ctx, s, fn, 0)
}

// retryIdem is callIdem after failed attempts that ended with an unknown
// outcome (a direct first attempt): it waits its backoff before each
// attempt but a first.
func retryIdem[T any](ctx context.Context, s *session, fn func() (T, error), failed int) (T, error) {
	var zero T
	for attempt := failed; ; attempt++ {
		if attempt > 0 {
			// The disconnection may not have been reported yet: don't spin.
			t := time.NewTimer(s.c.opts.Backoff.Delay(attempt - 1))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return zero, s.ctxErr(ctx)
			}
		}
		if err := s.awaitHeld(ctx); err != nil {
			return zero, err
		}
		v, err := call(ctx, s, fn)
		if err == nil || !isUnknown(err) {
			return v, err
		}
	}
}

// Classification of go-zookeeper errors.

// isDefinite reports an answer from the server (or a local validation
// error): the request certainly had that outcome.
func isDefinite(err error) bool {
	for _, e := range []error{zk.ErrNoNode, zk.ErrNodeExists, zk.ErrNoAuth, zk.ErrInvalidACL,
		zk.ErrAuthFailed, zk.ErrBadArguments, zk.ErrInvalidPath, zk.ErrInvalidFlags,
		zk.ErrNoChildrenForEphemerals, zk.ErrAPIError, zk.ErrNotEmpty, zk.ErrBadVersion} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// isSessionEnd reports errors after which this session can do nothing.
func isSessionEnd(err error) bool {
	return errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing)
}

// isUnknown reports a failure that leaves the request's outcome unknown:
// the connection broke (ErrConnectionClosed, a network error, a moved
// session) after the request may have reached the server.
func isUnknown(err error) bool {
	return err != nil && !isDefinite(err) && !isSessionEnd(err) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// opErr maps a failed call to baton's errors.
func (s *session) opErr(ctx context.Context, what string, err error) error {
	switch {
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return s.ctxErr(ctx)
	case isSessionEnd(err):
		return s.lostErr()
	case errors.Is(err, zk.ErrConnectionClosed):
		if st, _ := s.Observe(); st == baton.Lost {
			return s.lostErr()
		}
	case errors.Is(err, zk.ErrNoAuth):
		return fmt.Errorf("zklock: %s: %w: %w (%s)", what, baton.ErrAuth, err, s.c.aclHint())
	case errors.Is(err, zk.ErrAuthFailed), errors.Is(err, zk.ErrInvalidACL):
		return fmt.Errorf("zklock: %s: %w: %w", what, baton.ErrAuth, err)
	}
	return fmt.Errorf("zklock: %s: %w", what, err)
}
