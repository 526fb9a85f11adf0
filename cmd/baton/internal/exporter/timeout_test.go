package exporter

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/cmd/baton/internal/backend"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// shortTimeouts stand for the exporter's defaults in the test: the same
// server, timeouts a test can wait out.
var shortTimeouts = exporterTimeouts{readHeader: 300 * time.Millisecond, read: 300 * time.Millisecond,
	idle: 300 * time.Millisecond, write: 300 * time.Millisecond}

// startTestExporter serves the exporter of the lock "timeouts" on the
// test Redis with timeouts t, polling every 50ms, and returns its address.
func startTestExporter(t *testing.T, timeouts exporterTimeouts, maxConns ...int) string {
	t.Helper()
	env := cli.OSEnv()
	cfg, err := parseExporter(env, []string{"--backend", "redis://" + testenv.Redis(t), "--listen", "127.0.0.1:0", "timeouts"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, err := backend.Open(ctx, env, &cfg.Config, cfg.name)
	if err != nil {
		t.Fatalf("backend.Open(%s) = %v", cfg.Backend, err)
	}
	p, up, errs := newPoller(env, cfg, b)
	if _, err := p.poll(ctx); err != nil {
		t.Fatalf("poll = %v", err)
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		t.Fatal(err)
	}
	sec := exporterSecurity{maxStreams: 4, timeouts: timeouts, hosts: newHostGuard(cfg.listen, ln.Addr(), nil)}
	if len(maxConns) > 0 {
		ln = limitListener(ln, maxConns[0])
	}
	srv := newExporterServer(ctx, exporterHandler(p, up, errs, sec), sec)
	done := make(chan int)
	go func() { done <- serveExporter(ctx, env, cancel, srv, serveFunc(srv, ln), p, 50*time.Millisecond) }()
	t.Cleanup(func() {
		cancel()
		<-done
		b.Close()
	})
	return ln.Addr().String()
}

// closedWithin reports whether the server closes c within d, whatever it
// sends first.
func closedWithin(c net.Conn, r io.Reader, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestExporterTimeouts: the server closes a connection that sends half
// its headers (slowloris), one whose body trickles, and one left idle
// after a request, each within its timeout; an event stream outlives the
// read and write timeouts, event after event.
func TestExporterTimeouts(t *testing.T) {
	addr := startTestExporter(t, shortTimeouts)
	for _, tc := range []struct{ name, send string }{
		{"half a header", "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "},
		{"a body that trickles", "POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nx"},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, tc.send); err != nil {
			t.Fatal(err)
		}
		if !closedWithin(c, c, 3*time.Second) {
			t.Errorf("%s: the connection is still open after 3s", tc.name)
		}
	}

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %v, %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if !closedWithin(c, br, 3*time.Second) {
		t.Errorf("a kept-alive connection left idle is still open after 3s")
	}

	events, err := http.Get("http://" + addr + "/events")
	if err != nil {
		t.Fatalf("GET /events: %v", err)
	}
	defer events.Body.Close()
	sc := bufio.NewScanner(events.Body)
	start, n := time.Now(), 0
	for time.Since(start) < 2*time.Second {
		if !sc.Scan() {
			t.Fatalf("the event stream ended after %v and %d events (%v): the timeouts cut it", time.Since(start), n, sc.Err())
		}
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	if n < 5 {
		t.Errorf("%d events in 2s of polls every 50ms, want more", n)
	}
}

// TestExporterConnCap: connections beyond the cap wait to be accepted
// instead of taking a descriptor each (idle connections once exhausted
// the process's descriptors), and are served as soon as one closes.
func TestExporterConnCap(t *testing.T) {
	addr := startTestExporter(t, defaultExporterTimeouts, 2)
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	time.Sleep(100 * time.Millisecond) // both accepted
	get := func(timeout time.Duration) error {
		cl := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := cl.Get("http://" + addr + "/metrics")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(500 * time.Millisecond); err == nil {
		t.Fatal("a third connection was served with two of a cap of 2 open")
	}
	idle[0].Close()
	if err := get(5 * time.Second); err != nil {
		t.Fatalf("after one of the two closed, /metrics = %v, want served", err)
	}
}
