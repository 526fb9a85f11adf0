package cli

import (
	"strings"
	"testing"
)

// TestTidy: one prefix, long quoted and unquoted inputs cut to maxEcho
// bytes with their length, short ones and multi-byte characters intact.
func TestTidy(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes
	for _, tc := range []struct{ in, want string }{
		{"baton: invalid lock name \"a/../b\": \"..\" segment", "invalid lock name \"a/../b\": \"..\" segment"},
		{"connect x: baton: backend unavailable: eof", "connect x: backend unavailable: eof"},
		{"name " + clipQuote(long) + " bad", "name \"" + strings.Repeat("é", 32) + "\"…(1200 bytes) bad"},
		{"flag -" + strings.Repeat("x", 300) + " bad", "flag -" + strings.Repeat("x", 63) + "…(301 bytes) bad"},
		{"a \"unterminated", "a \"unterminated"},
	} {
		if got := Tidy(tc.in); got != tc.want {
			t.Errorf("Tidy(%.80q) = %.200q, want %.200q", tc.in, got, tc.want)
		}
	}
}

func clipQuote(s string) string { return "\"" + s + "\"" }
