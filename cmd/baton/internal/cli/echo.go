package cli

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxEcho is how many bytes of one piece of user input (a lock name, a
// flag's value, a URL) an error quotes: a 10 KB name pasted by mistake
// must not bury the one line that says what is wrong with it.
const maxEcho = 64

// maxWord is the longest unquoted word an error keeps whole: an input a
// message echoes without quotes (an unknown flag's name, say) is cut to
// its first maxEcho bytes past it. A URL or a path rarely comes near it.
const maxWord = 256

// Clip is s quoted as %q quotes it, or, when s is longer than maxEcho
// bytes, its first maxEcho bytes (cut at a character boundary) quoted and
// followed by "…(N bytes)", N being the length of the whole.
func Clip(s string) string {
	if len(s) <= maxEcho {
		return strconv.Quote(s)
	}
	return strconv.Quote(cutRunes(s, maxEcho)) + fmt.Sprintf("…(%d bytes)", len(s))
}

// cutRunes is the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutRunes(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Tidy is an error message as Fail and Note print it: without the
// "baton: " the library's sentinel errors begin with (Fail and Note print
// one prefix of their own), every quoted string longer than maxEcho
// clipped (Clip), and every unquoted word longer than maxWord cut alike, so
// that no error echoes a long input whole, whoever built the message.
func Tidy(msg string) string {
	msg = strings.TrimPrefix(msg, "baton: ")
	msg = strings.ReplaceAll(msg, ": baton: ", ": ")
	var b strings.Builder
	for i := 0; i < len(msg); {
		if msg[i] == '"' {
			if q, err := strconv.QuotedPrefix(msg[i:]); err == nil {
				i += len(q)
				if s, _ := strconv.Unquote(q); len(s) > maxEcho {
					q = Clip(s)
				}
				b.WriteString(q)
				continue
			}
		}
		j := i + 1
		for j < len(msg) && !strings.ContainsRune(" \t\n\"", rune(msg[j])) && msg[i] > ' ' {
			j++
		}
		if w := msg[i:j]; len(w) > maxWord {
			fmt.Fprintf(&b, "%s…(%d bytes)", cutRunes(w, maxEcho), len(w))
		} else {
			b.WriteString(w)
		}
		i = j
	}
	return b.String()
}
