package baton

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest lock name baton accepts, in bytes after
// normalisation. It keeps every engine's key or path well inside its limits.
const MaxNameLen = 1024

// ValidateName checks a lock name against the one naming rule every engine
// shares and returns it normalised (leading and trailing "/" removed).
//
// A name is a "/"-separated list of segments; no segment may be empty, "."
// or ".."; the name must be valid UTF-8 without control characters or the
// code points ZooKeeper forbids in paths (U+0080–U+009F, U+D800–U+F8FF,
// U+FFF0–U+FFFF), and at most MaxNameLen bytes. Any other name returns an
// error wrapping ErrInvalidName, so a name can never escape its engine's
// namespace.
//
// A lock name must not be a parent of another lock name: the entries of one
// lock would sit in the other's directory. Engines ignore children that are
// not entries of their recipe, but such a layout is a configuration error.
func ValidateName(name string) (string, error) {
	n := strings.Trim(name, "/")
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w %q: %s", ErrInvalidName, name, why)
	}
	switch {
	case n == "":
		return bad("empty")
	case len(n) > MaxNameLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxNameLen))
	case !utf8.ValidString(n):
		return bad("not valid UTF-8")
	}
	for _, r := range n {
		switch {
		case r < 0x20 || r == 0x7f:
			return bad(fmt.Sprintf("control character %U", r))
		case r >= 0x80 && r <= 0x9f, r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0 && r <= 0xffff:
			return bad(fmt.Sprintf("forbidden code point %U", r))
		}
	}
	for _, seg := range strings.Split(n, "/") {
		switch seg {
		case "":
			return bad("empty path segment")
		case ".", "..":
			return bad(fmt.Sprintf("%q segment", seg))
		}
	}
	return n, nil
}
