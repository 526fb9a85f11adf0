// Package gopool runs short calls on goroutines that outlive one call.
//
// The Redis engines run each request whose context can end on a goroutine
// of their own (go-redis does not cut a blocked read at a context's
// deadline), five per round on a Redlock of five nodes. A new goroutine
// starts on a small stack, and go-redis' call path grows it, copying it
// once or twice: runtime.copystack was 15 % of an uncontended Redlock
// lock+unlock's client CPU. A worker that has run one call keeps its
// grown stack and waits a moment for the next.
package gopool

import (
	"sync"
	"time"
)

// Linger is how long a worker waits for the next call: long enough for a
// loop's next lock, short enough that a leak check run as a test ends
// (goleak retries for about 400 ms) finds it gone, as queuekit's
// followers linger.
const Linger = 100 * time.Millisecond

// Pool runs calls on workers: goroutines that, after a call, wait up to
// Linger for the next before they return. At most MaxIdle wait at once;
// a call that finds none waiting starts a new one. The workers' owner is
// the Pool's owner: they return at once when Done is closed, after their
// call, and Wait waits for them.
type Pool struct {
	jobs   chan func()
	done   <-chan struct{}
	linger time.Duration // Linger; tests shorten or lengthen it

	mu      sync.Mutex
	idle    int // workers waiting on jobs
	maxIdle int
	wg      sync.WaitGroup
}

// New returns a Pool whose workers stop when done is closed, and of which
// at most maxIdle wait at once.
func New(done <-chan struct{}, maxIdle int) *Pool {
	return &Pool{jobs: make(chan func()), done: done, linger: Linger, maxIdle: maxIdle}
}

// Go runs f on a waiting worker, or on a new one. After done is closed it
// still runs f (on a worker that then returns); the owner must not call
// Go once it has called Wait.
func (p *Pool) Go(f func()) {
	select {
	case p.jobs <- f:
		return
	default:
	}
	p.wg.Add(1)
	go p.work(f)
}

// Wait waits until every worker has returned; call it after closing done.
func (p *Pool) Wait() { p.wg.Wait() }

// work runs f, then each call handed to it, until it has waited linger
// without one, done is closed, or MaxIdle others already wait.
func (p *Pool) work(f func()) {
	defer p.wg.Done()
	var t *time.Timer
	for {
		f()
		f = nil // not kept alive while waiting
		if !p.enter() {
			return
		}
		if t == nil {
			t = time.NewTimer(p.linger)
		} else {
			t.Reset(p.linger)
		}
		select {
		case f = <-p.jobs:
		case <-t.C:
		case <-p.done:
		}
		p.leave()
		if f == nil {
			t.Stop()
			return
		}
	}
}

// enter counts the worker as waiting, unless MaxIdle others already do.
func (p *Pool) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle >= p.maxIdle {
		return false
	}
	p.idle++
	return true
}

// leave counts a worker that stopped waiting.
func (p *Pool) leave() {
	p.mu.Lock()
	p.idle--
	p.mu.Unlock()
}
