package etcdlock

// leaseSuffix reads the last segment of an entry's key "<dir>/<lease hex>":
// the lease ID as etcdctl lock, etcdctl elect and baton write it (Go's %x
// of a lease ID: lowercase hexadecimal digits, no sign, no "0x", no
// leading zero, at most 16 digits). It is the one parser of that suffix:
// the queue reads, Inspect and Remove all go through it.
//
// A key under a lock whose suffix is anything else ("-1", "+5", "0x10",
// " 7", "07", "ABC") is foreign: no recipe wrote it. It takes no part in
// the queue — it neither blocks anyone nor is ever granted — and Inspect
// reports it as foreign (queuekit.EntryInfo.Foreign); Remove refuses it,
// since baton deletes only its own kind of keys. See also isEntry.
func leaseSuffix(s string) (uint64, bool) {
	if s == "" || len(s) > 16 || s[0] == '0' {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			v = v<<4 | uint64(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// isEntry reports whether a key under a lock, with last segment suffix and
// lease ID lease, is an entry of a recipe: named after a lease (see
// leaseSuffix) and attached to one. Every contender's key is put on its
// lease, by baton (Enqueue), etcdctl lock and elect, and concurrency.Mutex
// alike, and keeps it until deleted (baton's Pass touches it with
// WithIgnoreLease), so a key without a lease was written by something else,
// such as `etcdctl put appcfg/feature/1234abcd` beside a lock named
// "appcfg/feature". Such a key is foreign like a badly named one: no
// lease will ever expire it, so counting it would block the lock for
// ever, and removing it would delete a user's data.
func isEntry(suffix string, lease int64) bool {
	_, ok := leaseSuffix(suffix)
	return ok && lease != 0
}
