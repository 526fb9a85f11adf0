package faultproxy_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/baton-go/baton/internal/faultproxy"
)

// echo is a line echo server: the proxy's behaviour is what is under test.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return l.Addr().String()
}

func roundTrip(addr string, d time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return err
}

func TestProxyFaults(t *testing.T) {
	p, err := faultproxy.Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := roundTrip(p.Addr, time.Second); err != nil {
		t.Fatalf("healthy round trip = %v, want nil", err)
	}
	if err := p.Blackhole(""); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(p.Addr, 300*time.Millisecond); err == nil {
		t.Fatal("round trip through a blackhole succeeded, want a timeout")
	}
	p.Heal()
	if err := roundTrip(p.Addr, time.Second); err != nil {
		t.Fatalf("round trip after Heal = %v, want nil", err)
	}
	p.Refuse()
	if err := roundTrip(p.Addr, 300*time.Millisecond); err == nil {
		t.Fatal("round trip while refusing succeeded")
	}
	if err := p.Accept(); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(p.Addr, time.Second); err != nil {
		t.Fatalf("round trip after Accept = %v, want nil", err)
	}
	if err := p.CutAfter(faultproxy.Downstream, 0); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(p.Addr, 500*time.Millisecond); err == nil {
		t.Fatal("response arrived through CutAfter(Downstream, 0)")
	}
}
