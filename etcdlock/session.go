package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine/queuekit"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// Why a session ended.
var (
	errSessionClosed = errors.New("etcdlock: session closed")
	errIdle          = errors.New("etcdlock: idle session retired")
	errDeadline      = errors.New("etcdlock: no keepalive answered before the lease could expire")
	errLeaseGone     = errors.New("etcdlock: the server reports the lease gone")
)

// session is one etcd lease and the goroutines that keep it alive and clean
// up after it. All of them stop when the session ends: on Close, on Lost, or
// when the pool retires it.
type session struct {
	c       *Client
	id      clientv3.LeaseID
	hex     string
	granted time.Duration // TTL the server granted
	sent    time.Time     // send time of the Grant request

	stop     chan struct{} // closed to ask the loop to end the session
	stopOnce sync.Once
	kick     chan struct{} // a keepalive is wanted now (buffered 1)
	done     chan struct{} // closed once the session has ended
	// life is a context cancelled when the session ends (with done), for
	// bound.
	life    context.Context
	endLife context.CancelFunc

	mu       sync.Mutex
	state    baton.State
	changed  chan struct{}
	ended    bool
	cause    error
	fresh    map[string]*fresh  // dir → the queue read by Enqueue's transaction
	dirs     map[string]*dirOps // dir → its requests' parts (see ops)
	live     map[string]int64   // dir → the create revision of s's entry there, until its first delete (see Delete)
	cleaning bool               // the cleanup goroutine runs

	// Guarded by c.mu: the pool's bookkeeping.
	busy      map[string]bool           // dirs where a recipe has an entry on s
	pending   map[string]queuekit.Entry // dirs with an abandoned entry not yet deleted
	tainted   bool                      // a request's outcome stayed unknown: never reuse (see retire)
	idleSince time.Time
}

// fresh is the queue as the transaction that created an entry found it
// (the entry alone, or a read at the transaction's revision: see Enqueue),
// handed to the first List of that entry to save a round trip.
type fresh struct {
	e    queuekit.Entry
	snap queuekit.Snapshot
	// data holds what the other entries of snap store (entry ID → data
	// after the marker), when the read had their values: Data answers
	// from it, so judging them costs no request of its own.
	data map[string][]byte
	// one holds snap's entry when e is alone (see alone): the snapshot
	// and the entry it lists are one allocation.
	one [1]queuekit.Entry
}

func newSession(c *Client, id clientv3.LeaseID, granted time.Duration, sent time.Time) *session {
	life, endLife := context.WithCancel(context.Background())
	return &session{
		life:      life,
		endLife:   endLife,
		c:         c,
		id:        id,
		hex:       leaseHex(id),
		granted:   granted,
		sent:      sent,
		stop:      make(chan struct{}),
		kick:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		state:     baton.Held,
		changed:   make(chan struct{}),
		fresh:     make(map[string]*fresh),
		dirs:      make(map[string]*dirOps),
		live:      make(map[string]int64),
		busy:      make(map[string]bool),
		pending:   make(map[string]queuekit.Entry),
		idleSince: sent,
	}
}

// ID returns the lease ID in hex, as it appears in keys.
func (s *session) ID() string { return s.hex }

// Observe returns the state (Held, Suspended or Lost) and a channel closed
// at the next change.
func (s *session) Observe() (baton.State, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.changed
}

func (s *session) set(st baton.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.state == st {
		return
	}
	s.state = st
	close(s.changed)
	s.changed = make(chan struct{})
}

// end makes the session Lost for good. Only the loop calls it.
func (s *session) end(cause error) {
	s.c.remove(s)
	s.mu.Lock()
	s.ended, s.cause = true, cause
	s.state = baton.Lost
	close(s.changed)
	s.changed = make(chan struct{})
	close(s.done)
	s.mu.Unlock()
	s.endLife() // the requests bound to the session end with it
}

// alive returns nil while the session lives, else an error wrapping
// baton.ErrSessionLost.
func (s *session) alive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return fmt.Errorf("etcdlock: lease %s: %w: %w", s.hex, baton.ErrSessionLost, s.cause)
	}
	return nil
}

// bound derives a context from ctx that also ends when the session ends,
// so no request outlives the session it serves. A caller's context that
// carries nothing (Background, TODO: an acquire without a deadline) is
// replaced by the session's own, which costs nothing; another is merged
// with it by context.AfterFunc, without a goroutine. The returned cancel
// releases what the merge holds.
func (s *session) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == context.Background() || ctx == context.TODO() {
		return s.life, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// close asks the loop to end the session; it does not wait.
func (s *session) close() { s.stopOnce.Do(func() { close(s.stop) }) }

// spawn runs f in a goroutine owned by the session, unless the session has
// ended. Client.Close waits for it.
func (s *session) spawn(f func()) bool {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return false
	}
	s.c.wg.Add(1) // the loop's own count keeps the group above zero here
	s.mu.Unlock()
	go func() {
		defer s.c.wg.Done()
		f()
	}()
	return true
}

// timing returns the keepalive schedule for the granted TTL:
//
//   - a keepalive is sent every TTL/3;
//   - the session is Suspended when no keepalive sent within the last TTL/2
//     has been answered, i.e. an answer is about TTL/6 late;
//   - it is Lost at sendTime(last answered keepalive) + TTL − margin, with
//     margin = max(TTL/10, 100ms). The server restarts the lease's TTL
//     when it processes a keepalive, which is after we sent it, so its
//     expiry is never earlier than sendTime + TTL; the margin absorbs
//     clock-rate drift between the two hosts and scheduling delay here.
func timing(ttl time.Duration) (interval, suspect, lost time.Duration) {
	margin := max(ttl/10, 100*time.Millisecond)
	return ttl / 3, ttl / 2, ttl - margin
}

type kaResult struct {
	sent time.Time
	ttl  time.Duration
	err  error
}

// keepalives are the keepalive attempts in flight. An attempt still
// unanswered hedgeAfter after the newest one went out is backed up by a
// new attempt, up to maxKeepalives in flight. Each attempt opens a stream
// of its own, which the client's round robin puts on the next member: a
// member that is frozen or cut off from its peers keeps its connection
// ready and holds a keepalive routed to it until the deadline. Without
// hedges one slow member of three would cost sessions while the other two
// answer; with only one, a keepalive and its hedge both put on stuck
// members (two of three, or one when other requests take the round robin's
// turn in between) did.
type keepalives struct {
	results chan kaResult // buffered for every attempt
	cancels []context.CancelFunc
	n       int       // attempts in flight
	last    time.Time // send time of the newest attempt in flight
	ignore  int       // attempts cancelled after an answer: their errors mean nothing
}

// maxKeepalives bounds the attempts in flight: one per member of a
// three-member cluster, the common size.
const maxKeepalives = 3

func (k *keepalives) start(s *session, sent, deadline time.Time) {
	k.last = sent
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	k.cancels = append(k.cancels, cancel)
	k.n++
	go func() { // owned by the loop: it receives every result (cancelAll, drain)
		ttl, err := s.keepAliveOnce(ctx)
		k.results <- kaResult{sent: sent, ttl: ttl, err: err}
	}()
}

// cancelAll stops the attempts in flight; their results still arrive.
func (k *keepalives) cancelAll() {
	for _, c := range k.cancels {
		c()
	}
	k.cancels = nil
	k.ignore = k.n
}

// received books a result; it reports whether the loop should act on it.
func (k *keepalives) received(r kaResult) bool {
	k.n--
	if k.n == 0 {
		for _, c := range k.cancels {
			c()
		}
		k.cancels = nil
	}
	if k.ignore > 0 {
		k.ignore--
		return r.err == nil // a late answer still proves the server heard us
	}
	return true
}

func (k *keepalives) drain() {
	k.cancelAll()
	for ; k.n > 0; k.n-- {
		<-k.results
	}
}

// run is the keepalive loop: baton's own one-shot keepalives, whose send
// times it records on the monotonic clock (clientv3's KeepAlive hides
// them). It owns the keepalives in flight and ends the session.
func (s *session) run() {
	defer s.c.wg.Done()
	interval, suspect, lost := timing(s.granted)
	// A healthy member answers in milliseconds: an attempt still
	// unanswered after hedgeAfter is likely stuck on a member that does
	// not answer. The hedges go out early enough that the last of them
	// reaches another member before the lease turns Suspended.
	hedgeAfter := (suspect - interval) / maxKeepalives
	lastAck := s.sent // send time of the last answered keepalive (or grant)
	nextSend := lastAck.Add(interval)
	ka := &keepalives{results: make(chan kaResult, maxKeepalives)}
	var (
		attempt int
		cause   error
	)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
loop:
	for {
		now := time.Now()
		lostAt := lastAck.Add(lost)
		if !now.Before(lostAt) {
			cause = errDeadline
			break
		}
		late := now.Sub(lastAck) >= suspect
		if late {
			s.set(baton.Suspended)
		}
		// An attempt may run until the deadline: a late answer still
		// proves the server heard us at its send time, and cutting a slow
		// attempt short (a loaded host, a new stream per attempt) would
		// turn slowness into loss. A connection that breaks fails the
		// stream at once, and the loop retries with backoff.
		switch {
		case ka.n == 0 && !now.Before(nextSend):
			if s.c.retireIdle(s, now) {
				cause = errIdle
				break loop
			}
			ka.start(s, now, lostAt)
		case ka.n > 0 && ka.n < maxKeepalives && now.Sub(ka.last) >= hedgeAfter:
			ka.start(s, now, lostAt)
		}
		wake := lostAt
		if st, _ := s.Observe(); st == baton.Held {
			wake = minTime(wake, lastAck.Add(suspect))
		}
		if ka.n > 0 && ka.n < maxKeepalives {
			wake = minTime(wake, ka.last.Add(hedgeAfter))
		}
		if ka.n == 0 {
			wake = minTime(wake, nextSend)
		}
		timer.Reset(time.Until(wake))
		select {
		case <-timer.C:
		case <-s.stop:
			cause = errSessionClosed
			break loop
		case <-s.kick:
			if ka.n == 0 {
				nextSend = time.Now()
			}
		case r := <-ka.results:
			if !ka.received(r) {
				continue
			}
			switch {
			case r.err == nil:
				ka.cancelAll() // the other attempt's answer is not needed
				if r.sent.After(lastAck) {
					lastAck = r.sent
				}
				if r.ttl < s.granted {
					// Never assume more than the server says it granted.
					_, suspect, lost = timing(r.ttl)
				}
				attempt = 0
				nextSend = lastAck.Add(interval)
				if time.Since(lastAck) < suspect {
					s.set(baton.Held)
				}
			case errors.Is(r.err, rpctypes.ErrLeaseNotFound):
				cause = errLeaseGone
				break loop
			default:
				s.set(baton.Suspended)
				if ka.n == 0 {
					nextSend = time.Now().Add(min(s.c.opts.Backoff.Delay(attempt), interval))
					attempt++
				}
			}
		}
	}
	s.end(cause)
	ka.drain()
	if cause != errLeaseGone {
		s.c.revoke(s.id)
	}
}

// keepAliveOnce sends one keepalive on its own stream and waits for the
// answer. It is clientv3's KeepAliveOnce without the retry loop: that one
// re-sends at once on every Unavailable error (no leader, reconnecting), a
// hot loop for as long as the context lasts, and each re-send would have a
// send time we cannot see. Here a failure returns, the lease turns
// Suspended, and the loop retries with backoff. The connection's
// interceptors (authentication) still apply.
func (s *session) keepAliveOnce(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream
	stream, err := pb.NewLeaseClient(s.c.cli.ActiveConnection()).LeaseKeepAlive(ctx, grpc.WaitForReady(true))
	if err != nil {
		return 0, rpctypes.Error(err)
	}
	if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(s.id)}); err != nil {
		return 0, rpctypes.Error(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		return 0, rpctypes.Error(err)
	}
	if resp.TTL <= 0 {
		return 0, rpctypes.ErrLeaseNotFound
	}
	return time.Duration(resp.TTL) * time.Second, nil
}

// kickKeepalive asks the loop for a keepalive now, to learn quickly whether
// the lease is still there.
func (s *session) kickKeepalive() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
