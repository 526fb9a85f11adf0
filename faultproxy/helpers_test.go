package faultproxy_test

import (
	"bufio"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/baton-go/baton/faultproxy"
)

// TestMain checks that every goroutine of the proxies (and of the test
// servers) ended with them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// echoServer is a real TCP line echo server that also reports every line
// it receives, so that a test can tell a lost request from a lost answer.
type echoServer struct {
	addr string
	got  chan string
	ends chan struct{} // a connection closed (on either side)
}

// echo starts an echoServer closed, with all its goroutines ended, at the
// end of the test.
func echo(t *testing.T) *echoServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{addr: l.Addr().String(), got: make(chan string, 1024), ends: make(chan struct{}, 1024)}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() { // owner: this test; ends when the listener closes
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

func (s *echoServer) serve(c net.Conn) {
	defer func() {
		c.Close()
		select {
		case s.ends <- struct{}{}:
		default:
		}
	}()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		select {
		case s.got <- line:
		default:
		}
		if _, err := c.Write([]byte(line)); err != nil {
			return
		}
	}
}

// received returns the next line the server received within d, or "".
func (s *echoServer) received(d time.Duration) string {
	select {
	case line := <-s.got:
		return line
	case <-time.After(d):
		return ""
	}
}

// ended reports whether a connection of the server ended within d.
func (s *echoServer) ended(d time.Duration) bool {
	select {
	case <-s.ends:
		return true
	case <-time.After(d):
		return false
	}
}

// start opens a proxy to upstream, closed at the end of the test.
func start(t *testing.T, upstream string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(upstream)
	if err != nil {
		t.Fatalf("Start(%q) = %v", upstream, err)
	}
	t.Cleanup(p.Close)
	return p
}

// client is one connection through the proxy.
type client struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dial %s = %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{Conn: c, r: bufio.NewReader(c)}
}

func (c *client) send(t *testing.T, line string) {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatalf("write %q = %v", line, err)
	}
}

// recv reads one line within d.
func (c *client) recv(d time.Duration) (string, error) {
	c.SetReadDeadline(time.Now().Add(d))
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return line[:len(line)-1], nil
}

// roundTrip sends line and returns how long its echo took.
func (c *client) roundTrip(t *testing.T, line string, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c.send(t, line)
	got, err := c.recv(d)
	if err != nil || got != line {
		t.Fatalf("echo of %q = %q, %v; want %q, nil", line, got, err, line)
	}
	return time.Since(start)
}
