package faultproxy_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/baton-go/baton/faultproxy"
)

// quiet is how long a test waits to see that nothing arrives.
const quiet = 300 * time.Millisecond

// TestLatencyOnOpenLink: a latency set on a link already open delays its
// round trips by at least the latency, in one direction as in both.
func TestLatencyOnOpenLink(t *testing.T) {
	const d = 150 * time.Millisecond
	for _, tc := range []struct {
		name string
		dir  faultproxy.Direction
		want time.Duration
	}{
		{"upstream", faultproxy.Upstream, d},
		{"downstream", faultproxy.Downstream, d},
		{"both", "", 2 * d},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := start(t, echo(t).addr)
			c := dial(t, p.Addr)
			if took := c.roundTrip(t, "before", time.Second); took >= d {
				t.Fatalf("round trip before the latency took %v, want < %v", took, d)
			}
			if err := p.Latency(tc.dir, d, 0); err != nil {
				t.Fatalf("Latency(%q, %v) = %v", tc.dir, d, err)
			}
			if took := c.roundTrip(t, "during", 5*time.Second); took < tc.want {
				t.Errorf("round trip under Latency(%q, %v) took %v, want ≥ %v", tc.dir, d, took, tc.want)
			}
			p.Heal()
			if took := c.roundTrip(t, "after", time.Second); took >= d {
				t.Errorf("round trip after Heal took %v, want < %v", took, d)
			}
		})
	}
}

// TestLatencyPerChunk: the latency is counted per chunk from when it was
// read, so a stream of chunks is delayed, not throttled, and with jitter
// the chunks still arrive whole and in order.
func TestLatencyPerChunk(t *testing.T) {
	const (
		d, jitter = 200 * time.Millisecond, 100 * time.Millisecond
		n, gap    = 20, 10 * time.Millisecond
	)
	p := start(t, echo(t).addr)
	if err := p.Latency(faultproxy.Upstream, d, jitter); err != nil {
		t.Fatalf("Latency = %v", err)
	}
	c := dial(t, p.Addr)
	begin := time.Now()
	for i := range n {
		c.send(t, fmt.Sprint(i))
		time.Sleep(gap)
	}
	for i := range n {
		got, err := c.recv(5 * time.Second)
		if want := fmt.Sprint(i); err != nil || got != want {
			t.Fatalf("line %d = %q, %v; want %q (in order)", i, got, err, want)
		}
		if i == 0 {
			if took := time.Since(begin); took < d-jitter {
				t.Errorf("first line back after %v, want ≥ %v", took, d-jitter)
			}
		}
	}
	// Throttled, the lines would take n×d; delayed, about the sending time
	// plus one latency.
	if took, most := time.Since(begin), n*gap+d+jitter+time.Second; took > most {
		t.Errorf("%d lines took %v under a %v latency, want ≤ %v: the latency accumulates", n, took, d, most)
	}
}

// TestLatencyHeal: a latency longer than the test stands for a partition
// whose held bytes arrive, complete and in order, on the same connection
// once it heals.
func TestLatencyHeal(t *testing.T) {
	s := echo(t)
	p := start(t, s.addr)
	c := dial(t, p.Addr)
	c.roundTrip(t, "hello", time.Second)
	<-s.got
	if err := p.Latency("", time.Hour, 0); err != nil {
		t.Fatalf("Latency = %v", err)
	}
	lines := []string{"a", "b", "c"}
	for _, l := range lines {
		c.send(t, l)
	}
	if got := s.received(quiet); got != "" {
		t.Fatalf("server received %q through an hour's latency", got)
	}
	p.Heal()
	for _, want := range lines {
		if got, err := c.recv(time.Second); err != nil || got != want {
			t.Fatalf("after Heal: line = %q, %v; want %q", got, err, want)
		}
	}
}

// TestBlackhole: a blackhole on an open link drops the bytes but keeps the
// connection open; new connections are accepted and blackholed too. Heal
// closes the connections it covered and new ones work.
func TestBlackhole(t *testing.T) {
	s := echo(t)
	p := start(t, s.addr)
	old := dial(t, p.Addr)
	old.roundTrip(t, "before", time.Second)
	<-s.got
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	old.send(t, "lost")
	if got, err := old.recv(quiet); !isTimeout(err) {
		t.Fatalf("read through a blackhole = %q, %v; want a timeout (connection held open)", got, err)
	}
	if got := s.received(quiet); got != "" {
		t.Fatalf("server received %q through a blackhole", got)
	}
	fresh := dial(t, p.Addr)
	fresh.send(t, "lost too")
	if got, err := fresh.recv(quiet); !isTimeout(err) {
		t.Fatalf("read on a new connection through a blackhole = %q, %v; want a timeout", got, err)
	}
	p.Heal()
	if got, err := old.recv(time.Second); !errors.Is(err, io.EOF) {
		t.Errorf("read on a blackholed connection after Heal = %q, %v; want EOF (closed)", got, err)
	}
	dial(t, p.Addr).roundTrip(t, "after", time.Second)
}

// TestBlackholeKeepsFIN: a client that gives up and closes its connection
// behind a blackhole is not heard by the server until Heal.
func TestBlackholeKeepsFIN(t *testing.T) {
	s := echo(t)
	p := start(t, s.addr)
	c := dial(t, p.Addr)
	c.roundTrip(t, "before", time.Second)
	if err := p.Blackhole(""); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	c.Close()
	if s.ended(quiet) {
		t.Fatal("server saw the client's close through a blackhole")
	}
	p.Heal()
	if !s.ended(time.Second) {
		t.Error("server's connection still open a second after Heal")
	}
}

// TestDirectionsIndependent: a blackhole on the responses leaves the
// requests flowing (the server applies them, the client hears nothing),
// and the other way round.
func TestDirectionsIndependent(t *testing.T) {
	t.Run("downstream", func(t *testing.T) {
		s := echo(t)
		p := start(t, s.addr)
		if err := p.Blackhole(faultproxy.Downstream); err != nil {
			t.Fatalf("Blackhole = %v", err)
		}
		c := dial(t, p.Addr)
		c.send(t, "applied")
		if got := s.received(time.Second); got != "applied\n" {
			t.Errorf("server received %q, want the request (only responses are blackholed)", got)
		}
		if got, err := c.recv(quiet); !isTimeout(err) {
			t.Errorf("response through a downstream blackhole = %q, %v; want a timeout", got, err)
		}
	})
	t.Run("upstream", func(t *testing.T) {
		s := echo(t)
		p := start(t, s.addr)
		if err := p.Latency(faultproxy.Downstream, quiet, 0); err != nil {
			t.Fatalf("Latency = %v", err)
		}
		c := dial(t, p.Addr)
		c.send(t, "answered")
		if got := s.received(time.Second); got != "answered\n" {
			t.Fatalf("server received %q, want the request", got)
		}
		// The answer is on its way back, held by the latency.
		if err := p.Blackhole(faultproxy.Upstream); err != nil {
			t.Fatalf("Blackhole = %v", err)
		}
		if got, err := c.recv(time.Second); err != nil || got != "answered" {
			t.Errorf("response under an upstream blackhole = %q, %v; want %q", got, err, "answered")
		}
		c.send(t, "lost")
		if got := s.received(quiet); got != "" {
			t.Errorf("server received %q through an upstream blackhole", got)
		}
	})
}

// TestCutAfter: n more bytes pass, then the connection closes; with 0 an
// idle connection stays open and the next answer is lost while the server
// still applies its request.
func TestCutAfter(t *testing.T) {
	t.Run("n", func(t *testing.T) {
		p := start(t, echo(t).addr)
		c := dial(t, p.Addr)
		c.roundTrip(t, "before", time.Second)
		if err := p.CutAfter(faultproxy.Downstream, 5); err != nil {
			t.Fatalf("CutAfter = %v", err)
		}
		c.send(t, "hello world")
		c.SetReadDeadline(time.Now().Add(time.Second))
		got, err := io.ReadAll(c.r)
		if string(got) != "hello" || err != nil {
			t.Errorf("read after CutAfter(Downstream, 5) = %q, %v; want %q then EOF", got, err, "hello")
		}
	})
	t.Run("each call counts afresh", func(t *testing.T) {
		p := start(t, echo(t).addr)
		c := dial(t, p.Addr)
		if err := p.CutAfter(faultproxy.Downstream, 5); err != nil {
			t.Fatalf("CutAfter = %v", err)
		}
		c.roundTrip(t, "ab", time.Second) // 3 of the 5 bytes
		if err := p.CutAfter(faultproxy.Downstream, 5); err != nil {
			t.Fatalf("CutAfter = %v", err)
		}
		c.roundTrip(t, "abcd", time.Second) // 5 more
		if got, err := c.recv(time.Second); !errors.Is(err, io.EOF) {
			t.Errorf("read after the allowance = %q, %v; want EOF", got, err)
		}
	})
	t.Run("zero", func(t *testing.T) {
		s := echo(t)
		p := start(t, s.addr)
		c := dial(t, p.Addr)
		c.roundTrip(t, "before", time.Second)
		<-s.got
		if err := p.CutAfter(faultproxy.Downstream, 0); err != nil {
			t.Fatalf("CutAfter = %v", err)
		}
		time.Sleep(50 * time.Millisecond)
		c.send(t, "request")
		if got := s.received(time.Second); got != "request\n" {
			t.Errorf("server received %q, want the request sent after CutAfter(Downstream, 0)", got)
		}
		if got, err := c.recv(time.Second); !errors.Is(err, io.EOF) {
			t.Errorf("response after CutAfter(Downstream, 0) = %q, %v; want EOF", got, err)
		}
		p.Heal()
		dial(t, p.Addr).roundTrip(t, "after", time.Second)
	})
}

// TestResetPeer: the client reads ECONNRESET where it expected an answer.
func TestResetPeer(t *testing.T) {
	p := start(t, echo(t).addr)
	c := dial(t, p.Addr)
	c.roundTrip(t, "before", time.Second)
	if err := p.ResetPeer(0); err != nil {
		t.Fatalf("ResetPeer = %v", err)
	}
	c.send(t, "reset")
	if got, err := c.recv(time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read after ResetPeer(0) = %q, %v; want ECONNRESET", got, err)
	}
}

// TestRefuseAccept: Refuse cuts open connections and refuses new dials;
// Accept listens on the same address again.
func TestRefuseAccept(t *testing.T) {
	p := start(t, echo(t).addr)
	c := dial(t, p.Addr)
	c.roundTrip(t, "before", time.Second)
	p.Refuse()
	if got, err := c.recv(time.Second); !errors.Is(err, io.EOF) {
		t.Errorf("read on an open connection after Refuse = %q, %v; want EOF", got, err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial while refusing = %v, want ECONNREFUSED", err)
	}
	p.Refuse() // twice is harmless
	if err := p.Accept(); err != nil {
		t.Fatalf("Accept = %v", err)
	}
	if err := p.Accept(); err != nil {
		t.Fatalf("Accept while accepting = %v, want nil", err)
	}
	dial(t, p.Addr).roundTrip(t, "after", time.Second)
}

// TestCloseEndsEverything: Close cuts links holding data in every kind
// of fault and returns with the proxy's goroutines gone (TestMain's leak
// check has the last word); a closed proxy does not accept again.
func TestCloseEndsEverything(t *testing.T) {
	p := start(t, echo(t).addr)
	held := dial(t, p.Addr)
	if err := p.Latency(faultproxy.Upstream, time.Hour, 0); err != nil {
		t.Fatalf("Latency = %v", err)
	}
	held.send(t, "held")
	if err := p.Blackhole(faultproxy.Downstream); err != nil {
		t.Fatalf("Blackhole = %v", err)
	}
	if err := p.ResetPeer(time.Hour); err != nil {
		t.Fatalf("ResetPeer = %v", err)
	}
	dial(t, p.Addr).send(t, "held too")
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5s")
	}
	if got, err := held.recv(time.Second); !errors.Is(err, io.EOF) {
		t.Errorf("read after Close = %q, %v; want EOF", got, err)
	}
	if err := p.Accept(); !errors.Is(err, faultproxy.ErrClosed) {
		t.Errorf("Accept after Close = %v, want ErrClosed", err)
	}
	p.Close() // twice is harmless
}

// TestBadArguments: an unknown direction or a negative amount is an error.
func TestBadArguments(t *testing.T) {
	p := start(t, echo(t).addr)
	for name, err := range map[string]error{
		"Blackhole(sideways)": p.Blackhole("sideways"),
		"Latency(-1s)":        p.Latency("", -time.Second, 0),
		"CutAfter(-1)":        p.CutAfter(faultproxy.Downstream, -1),
		"ResetPeer(-1s)":      p.ResetPeer(-time.Second),
	} {
		if err == nil {
			t.Errorf("%s = nil, want an error", name)
		}
	}
}

func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}
