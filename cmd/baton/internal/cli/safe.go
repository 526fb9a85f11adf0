package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// TermSafe escapes what a terminal would act on rather than show, so that
// a value written by another client (an owner, a kind, an entry name)
// cannot move the cursor, retitle the window, erase the line, break the
// table's columns or reorder the text around it: C0 controls (ESC, CR, NUL,
// tab…), DEL, C1 controls, invalid UTF-8, the bidirectional overrides,
// embeddings, isolates and marks, and the line and paragraph separators.
// They are written as Go escapes (\x1b, \u202e); a backslash is doubled,
// so an escape in the output always stands for the character.
func TermSafe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string) bool {
	if !utf8.ValidString(s) || strings.ContainsRune(s, '\\') {
		return true
	}
	return strings.ContainsFunc(s, unsafeRune)
}

// unsafeRune reports the characters TermSafe escapes (and jsonSafe, but
// for those encoding/json already escapes).
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// WriteJSON writes v as indented JSON. encoding/json escapes the C0
// controls but writes DEL, the C1 controls and the bidirectional
// characters raw: valid JSON, yet a terminal that shows it acts on them.
// They are written as \u escapes, which decode to the same strings.
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonSafe(buf.Bytes()))
	return err
}

// jsonSafe rewrites the characters of unsafeRune in encoded JSON as \u
// escapes. They can only stand inside strings (JSON's own syntax is
// ASCII), where an escape means the same character.
func jsonSafe(js []byte) []byte {
	if !bytes.ContainsFunc(js, func(r rune) bool { return r >= 0x7f && unsafeRune(r) }) {
		return js
	}
	out := make([]byte, 0, len(js)+16)
	for i := 0; i < len(js); {
		r, n := utf8.DecodeRune(js[i:])
		if r >= 0x7f && unsafeRune(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, js[i:i+n]...)
		}
		i += n
	}
	return out
}
