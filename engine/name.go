package engine

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/baton-go/baton"
)

// ValidateName checks a lock name against the one naming rule every engine
// shares and returns it normalised (leading and trailing "/" removed).
//
// A name is a "/"-separated list of segments; no segment may be empty, "."
// or ".."; the name must be valid UTF-8 without control characters or the
// code points ZooKeeper forbids in paths (U+0080–U+009F, U+D800–U+F8FF,
// U+FFF0–U+FFFF), and at most baton.MaxNameLen bytes (see ValidatePath).
// No segment may be one the recipes name their own nodes and keys with:
//
//   - "locks" and "leases": a semaphore keeps its guard queue under
//     "<name>/locks" and its permits under "<name>/leases", so a mutex
//     named "x/locks" would queue with semaphore "x"'s acquirers;
//   - a segment starting with "_c_" (the protected prefix of every
//     ZooKeeper entry), or ending with a recipe's entry marker ("lock-",
//     "__READ__", "__WRIT__", "latch-", "lease-") and ten or more digits:
//     the queue of the parent name would read that lock's directory as
//     one of its own entries.
//
// Any other name returns an error wrapping baton.ErrInvalidName, so a name
// can never escape its engine's namespace nor land in another lock's queue.
//
// A lock name must not be a parent of another lock name: the entries of one
// lock would sit in the other's directory. Engines ignore children that are
// not entries of their recipe, but such a layout is a configuration error.
func ValidateName(name string) (string, error) {
	n, err := ValidatePath(name)
	if err != nil {
		return "", err
	}
	for seg := range segments(n) {
		if why := reservedSegment(seg); why != "" {
			return "", fmt.Errorf("%w %q: segment %q is reserved: %s", baton.ErrInvalidName, name, seg, why)
		}
	}
	return n, nil
}

// ValidatePath checks name against the syntax of the naming rule only (not
// its reserved segments) and returns it normalised. Engines use it for the
// directories the recipes derive from a valid name ("<name>/locks") and
// for a ZooKeeper chroot; lock names go through ValidateName. Errors wrap
// baton.ErrInvalidName.
func ValidatePath(name string) (string, error) {
	n := strings.Trim(name, "/")
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w %q: %s", baton.ErrInvalidName, name, why)
	}
	switch {
	case n == "":
		return bad("empty")
	case len(n) > baton.MaxNameLen:
		return bad(fmt.Sprintf("longer than %d bytes", baton.MaxNameLen))
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
	for seg := range segments(n) {
		switch seg {
		case "":
			return bad("empty path segment")
		case ".", "..":
			return bad(fmt.Sprintf("%q segment", seg))
		}
	}
	return n, nil
}

// segments yields the "/"-separated segments of name, as strings.Split
// would return them, without building the slice: the engines validate a
// directory on every acquire.
func segments(name string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for {
			seg, rest, more := strings.Cut(name, "/")
			if !yield(seg) || !more {
				return
			}
			name = rest
		}
	}
}

// entryMarkers are the recipes' entry markers (queuekit.Kind: Curator's
// layout), which a ZooKeeper entry name carries before its sequence.
var entryMarkers = []string{"lock-", "__READ__", "__WRIT__", "latch-", "lease-"}

// reservedSegment says why seg may not be a segment of a lock name, or ""
// when it may.
func reservedSegment(seg string) string {
	switch {
	case seg == "locks" || seg == "leases":
		return `a semaphore keeps its queues under "<name>/locks" and "<name>/leases"`
	case strings.HasPrefix(seg, "_c_"):
		return `"_c_" starts the name of every ZooKeeper entry`
	}
	i := len(seg)
	for i > 0 && seg[i-1] >= '0' && seg[i-1] <= '9' {
		i--
	}
	if len(seg)-i < 10 {
		return ""
	}
	for _, m := range entryMarkers {
		if strings.HasSuffix(seg[:i], m) {
			return fmt.Sprintf("a marker %q and a sequence name a ZooKeeper entry", m)
		}
	}
	return ""
}
