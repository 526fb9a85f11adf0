package kubelock

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Label and annotation keys on the Leases baton writes (see the package
// doc's "Objects").
const (
	// labelLock carries a hash of the full lock name: a label value is at
	// most 63 characters of a restricted set, a lock name up to 1024
	// bytes of any printable text. Inspect and the waiters' watch select
	// a name's Leases by it.
	labelLock = "baton.dev/lock"
	// labelManaged marks a Lease baton has written.
	labelManaged = "app.kubernetes.io/managed-by"
	managedBy    = "baton"

	// annName keeps the full lock name: the object name may be a mapped
	// one, and a hash does not read back.
	annName = "baton.dev/name"
	// annToken is the name's token counter (decimal).
	annToken = "baton.dev/token"
	// annState is the baton holders and waiters of the name (JSON, see
	// state.go).
	annState = "baton.dev/state"
	// annWaiters is how many waiters annState lists: what the watch
	// reads to tell a waiter who left (a wake-up) from one who joined
	// (none) without decoding the state.
	annWaiters = "baton.dev/waiters"
)

// maxPrefix bounds the readable part of a mapped object name: with "-"
// and the 16-character hash it stays well inside 253.
const maxPrefix = 200

// nameHash is the hex SHA-256 of a lock name, cut to 32 digits (128 bits):
// the value of labelLock.
func nameHash(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// objectName maps a lock name to the name of its Lease. A name that is
// already a valid object name (a DNS-1123 subdomain: lower-case letters,
// digits, '-' and '.', at most 253 characters) is used as it is, so that
// baton's Election "my-controller" and client-go's LeaseLock
// "my-controller" are the same Lease. Any other name is mapped to a
// readable prefix (lower-cased, every other character a '-') and a hash of
// the whole name, so two names never share a Lease; the full name is kept
// in the baton.dev/name annotation, which every read checks.
func objectName(name string) string {
	if len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= maxPrefix {
			break
		}
	}
	prefix := strings.TrimRight(cutBytes(b.String(), maxPrefix), "-")
	sum := sha256.Sum256([]byte(name))
	h := strings.ToLower(b32.EncodeToString(sum[:10]))
	if prefix == "" {
		return "baton-" + h
	}
	return prefix + "-" + h
}

// cutBytes cuts an ASCII string to at most n bytes.
func cutBytes(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
