package bench_test

import (
	"bytes"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
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
	turns      atomic.Int64
	keepalives atomic.Int64
}

// startTurnProxy listens on a loopback port for upstream; closed at
// cleanup. keepalive, if not nil, tells a flight that is only a
// connection's keepalive (its first burst is all of it): Requests leaves
// those out, as the curves leave out ZooKeeper's pings and etcd's lease
// keepalives; Turns counts them (a floor of PINGs is made of them).
func startTurnProxy(tb testing.TB, upstream string, keepalive func(burst []byte) bool) *turnProxy {
	tb.Helper()
	p := &turnProxy{}
	p.relay = startRelay(tb, "turnProxy", upstream, func() (up, down func(dst, src net.Conn)) {
		// lastUp is true while the latest bytes went client → server: the
		// next upward burst after a reply starts a new flight.
		var lastUp atomic.Bool
		up = func(dst, src net.Conn) {
			pump(dst, src, func(burst []byte) {
				if lastUp.Swap(true) {
					return
				}
				p.turns.Add(1)
				if keepalive != nil && keepalive(burst) {
					p.keepalives.Add(1)
				}
			})
		}
		// Marked before the reply is forwarded, so the client's next
		// request, which can only follow it, sees the mark.
		down = func(dst, src net.Conn) { pump(dst, src, func([]byte) { lastUp.Store(false) }) }
		return up, down
	})
	return p
}

// Turns is the running count of request flights over every connection.
func (p *turnProxy) Turns() int64 { return p.turns.Load() }

// Requests is Turns without the flights that were only a keepalive.
func (p *turnProxy) Requests() int64 { return p.turns.Load() - p.keepalives.Load() }

// redisPing tells a burst that is one PING without a payload, as
// go-redis's pub/sub health check sends it (redislock and redlock
// subscribe one connection per client, checked every TTL).
func redisPing(burst []byte) bool { return bytes.EqualFold(burst, respPing) }

var respPing = []byte("*1\r\n$4\r\nping\r\n")

// TestTurnProxyKeepalives: through a Redis counting proxy, a PING is a
// flight Turns counts and Requests leaves out; a PING with a payload and
// any other command count in both.
func TestTurnProxyKeepalives(t *testing.T) {
	rdb, p, _ := newRedisClient(t, redisAddr(t), true) // dials and PINGs once
	ctx := t.Context()
	t0, r0 := p.Turns(), p.Requests()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING = %v", err)
	}
	if err := rdb.Do(ctx, "PING", "payload").Err(); err != nil {
		t.Fatalf("PING payload = %v", err)
	}
	if err := rdb.Get(ctx, "baton-bench:no-such-key").Err(); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("GET = %v", err)
	}
	if dt, dr := p.Turns()-t0, p.Requests()-r0; dt != 3 || dr != 2 {
		t.Errorf("after PING, PING payload, GET: %d turns and %d requests, want 3 and 2", dt, dr)
	}
}
