package exporter

import (
	"net"
	"os"
	"strings"
	"testing"
)

// TestHostGuard: which Host headers an exporter answers, per address it
// listens on; an IP address is allowed when bound to every interface,
// since no rebinding produces one, a name only when given.
func TestHostGuard(t *testing.T) {
	self, _ := os.Hostname()
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 9187} }
	tests := []struct {
		listen  string
		bound   net.Addr
		allow   []string
		yes, no []string
	}{
		{"127.0.0.1:9187", tcp("127.0.0.1"), nil,
			[]string{"localhost", "LOCALHOST:9187", "127.0.0.1:9187", "127.0.0.2", "[::1]:9187", "localhost."},
			[]string{"", "attacker.example", "localhost.attacker.example", "10.0.0.5", self + ".attacker.example"}},
		{":9187", tcp("::"), []string{"prom.example"},
			[]string{"10.0.0.5:9187", "[2001:db8::1]:9187", "localhost", strings.ToLower(self), "prom.example:9187"},
			[]string{"attacker.example:9187", "example"}},
		{"10.0.0.5:9187", tcp("10.0.0.5"), nil,
			[]string{"10.0.0.5", "10.0.0.5:9187"},
			[]string{"127.0.0.1", "localhost", "10.0.0.6", "attacker.example"}},
		{"locks.internal:9187", tcp("10.0.0.5"), nil,
			[]string{"locks.internal:9187", "Locks.Internal", "10.0.0.5"},
			[]string{"localhost", "127.0.0.1", "attacker.example"}},
	}
	for _, tc := range tests {
		g := newHostGuard(tc.listen, tc.bound, tc.allow)
		for _, h := range tc.yes {
			if !g.allows(h) {
				t.Errorf("listen %s: Host %q refused, want allowed", tc.listen, h)
			}
		}
		for _, h := range tc.no {
			if g.allows(h) {
				t.Errorf("listen %s: Host %q allowed, want refused", tc.listen, h)
			}
		}
	}
}
