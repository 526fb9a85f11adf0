package cli

import "testing"

// TestSafeTermSafe: every character a terminal acts on comes out escaped,
// everything else as it was.
func TestSafeTermSafe(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain-owner_42 ü 名前", "plain-owner_42 ü 名前"},
		{"\x1b[2J\x1b]0;pwned\x07", `\x1b[2J\x1b]0;pwned\x07`},
		{"a\rb\nc\td\x00e\x7f", `a\x0db\x0ac\x09d\x00e\x7f`},
		{"c1:\u0085\u009b", `c1:\u0085\u009b`},
		{"bidi:\u202eevil\u202c\u2066x\u2069\u200f\u061c", `bidi:\u202eevil\u202c\u2066x\u2069\u200f\u061c`},
		{"sep\u2028\u2029", `sep\u2028\u2029`},
		{"bad\xff\xfe", `bad\xff\xfe`},
		{`back\x1bslash`, `back\\x1bslash`},
	}
	for _, tt := range tests {
		if got := TermSafe(tt.in); got != tt.want {
			t.Errorf("TermSafe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
