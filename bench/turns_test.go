package bench_test

import (
	"net"
	"sync/atomic"
	"testing"
)

// turnProxy forwards TCP connections to one server and counts round trips
// on the client's side of the wire: a burst of bytes from the client that
// follows a reply (or opens the connection) is one request flight. A
// pipeline of many commands sent before reading any reply is one flight,
// as it costs one network round trip; a transaction of four statements
// each waiting for its reply is four. That is the figure baton's targets
// speak of ("one round trip to acquire and one to release"), and
// it needs no cooperation from the server, which other clients share. A
// pipeline so long that the server answers its first commands before the
// client has sent the last counts twice or more: the count is exact for
// requests of a few kB.
//
// Only the counted twins of the measured pairs go through it: it adds two
// socket copies per direction, which would flatten the timing ratios.
type turnProxy struct {
	*relay
	turns atomic.Int64
}

// startTurnProxy listens on a loopback port for upstream; closed at cleanup.
func startTurnProxy(tb testing.TB, upstream string) *turnProxy {
	tb.Helper()
	p := &turnProxy{}
	p.relay = startRelay(tb, "turnProxy", upstream, func() (up, down func(dst, src net.Conn)) {
		// lastUp is true while the latest bytes went client → server: the
		// next upward burst after a reply starts a new flight.
		var lastUp atomic.Bool
		up = func(dst, src net.Conn) {
			pump(dst, src, func() {
				if !lastUp.Swap(true) {
					p.turns.Add(1)
				}
			})
		}
		// Marked before the reply is forwarded, so the client's next
		// request, which can only follow it, sees the mark.
		down = func(dst, src net.Conn) { pump(dst, src, func() { lastUp.Store(false) }) }
		return up, down
	})
	return p
}

// Turns is the running count of request flights over every connection.
func (p *turnProxy) Turns() int64 { return p.turns.Load() }
