// Package clock is the time source of baton's timing logic — the lease
// keeper, the in-memory engine — so that tests can run it on a virtual
// clock instead of waiting for real TTLs to pass.
//
// Production code uses Real, which is the time package. Tests use a *Fake:
// its time moves only when the test calls Advance, and timers fire in
// deadline order as it passes them, so a story that spans minutes of lease
// time runs in milliseconds and the same way every time.
//
// Only the calls baton's timing logic needs are here: Now, Since, Until,
// timers and AfterFunc. Contexts with deadlines (context.WithDeadline)
// read the real clock; code that must run on a Fake cancels contexts with
// AfterFunc instead.
package clock

import "time"

// Clock tells the time and makes timers.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Since returns the time elapsed since t.
	Since(t time.Time) time.Duration
	// Until returns the duration until t.
	Until(t time.Time) time.Duration
	// NewTimer returns a timer that sends the time on its channel once d
	// has passed.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine once d has passed; Stop on the
	// returned timer cancels the call if it has not started.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a time.Timer of a Clock. C is nil for timers made by AfterFunc.
type Timer interface {
	// C returns the channel the timer sends on.
	C() <-chan time.Time
	// Stop prevents the timer from firing; false means it had already
	// fired or been stopped.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether the timer
	// was active. As with time.Timer (Go 1.23 and later), no stale value
	// is received after Stop or Reset returns.
	Reset(d time.Duration) bool
}

// Real is the clock of the time package.
var Real Clock = realClock{}

// Or returns c, or Real when c is nil: options leave Clock nil for the
// real clock.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) Since(t time.Time) time.Duration { return time.Since(t) }
func (realClock) Until(t time.Time) time.Duration { return time.Until(t) }
func (realClock) NewTimer(d time.Duration) Timer  { return realTimer{time.NewTimer(d)} }
func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
