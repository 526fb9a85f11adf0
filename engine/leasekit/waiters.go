package leasekit

import (
	"strconv"
	"sync/atomic"
)

// Waiters numbers one client's waiters for an engine whose releases wake
// one waiter at a time (see PollFloor): a waiter's id, which its intents
// carry on the server, is the client's ID, ".", and its number; the
// number alone is the key the client's listener wakes it by.
type Waiters struct {
	ID   string // the client's id, set once before the first Next
	next atomic.Uint64
}

// Next returns a new waiter's id and number.
func (w *Waiters) Next() (id, num string) {
	num = strconv.FormatUint(w.next.Add(1), 36)
	return w.ID + "." + num, num
}
