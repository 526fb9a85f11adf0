package redislock

import (
	"strconv"
	"strings"
	"sync"
)

// Key layout (see the package doc). Every key of one lock name carries the
// escaped name as its hash tag, so a Redis Cluster keeps them in one slot
// and a script may touch them all; the token counter of that slot carries
// a precomputed tag that hashes to the same slot.

// escapeName makes name safe as a hash tag: a Redis hash tag is the text
// between the first "{" and the first "}" after it, so the escaped name
// must contain neither. "%" is the escape character, so the mapping is
// one-to-one: % → %25, { → %7B, } → %7D. A valid lock name is never
// empty, so the tag is never empty (an empty "{}" would hash the whole key).
func escapeName(name string) string {
	if !strings.ContainsAny(name, "%{}") {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unescapeName reverses escapeName.
func unescapeName(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	r := strings.NewReplacer("%25", "%", "%7B", "{", "%7D", "}")
	return r.Replace(s)
}

// keys are the Redis keys of one lock name.
type keys struct {
	base    string // <prefix>:{<escaped name>}
	counter string // <prefix>:tokens:{<slot tag>}
	wake    string // pub/sub channel: releases (and election grants) of the name
}

func (c *Client) keysOf(name string) keys {
	var k [2]string
	wake := c.packKeys(name, k[:], "", keyCounter)
	return keys{base: k[0], counter: k[1], wake: wake}
}

// keyCounter stands for the name's slot counter among packKeys' suffixes.
const keyCounter = "\x00counter"

// packKeys sets dst[i] to name's key with suffix sfxs[i] (keyCounter: its
// slot counter) and returns its channel, all substrings of one string: a
// lock object's keys in one allocation (see specBlock). It is the one
// place that spells the layout.
func (c *Client) packKeys(name string, dst []string, sfxs ...string) (wake string) {
	e, p := escapeName(name), c.o.Prefix
	tag := slotTag(slotOf(e))
	parts := func(i int) [5]string {
		switch {
		case i == len(sfxs):
			return [5]string{p, ":{", e, "}", sfxWake}
		case sfxs[i] == keyCounter:
			return [5]string{p, ":tokens:{", tag, "}", ""}
		}
		return [5]string{p, ":{", e, "}", sfxs[i]}
	}
	size := 0
	for i := range len(sfxs) + 1 {
		for _, s := range parts(i) {
			size += len(s)
		}
	}
	var b strings.Builder
	b.Grow(size)
	var ends [8]int // the most suffixes (the read/write lock's seven) and the channel
	for i := range len(sfxs) + 1 {
		for _, s := range parts(i) {
			b.WriteString(s)
		}
		ends[i] = b.Len()
	}
	all, start := b.String(), 0
	for i := range sfxs {
		dst[i], start = all[start:ends[i]], ends[i]
	}
	return all[start:]
}

// boxPointers appends a pointer to each of keys to boxed: go-redis writes
// (and routes a Cluster command by) a *string as the string, and a
// pointer boxes without an allocation.
func boxPointers(boxed []any, keys []string) []any {
	for i := range keys {
		boxed = append(boxed, &keys[i])
	}
	return boxed
}

const (
	sfxMutex        = ":mutex"         // string "<owner> <token> <proc>": the holder (see acquireMutex)
	sfxMutexWaiters = ":mutex:waiters" // zset waiter id → expiry (ms, server clock)
	sfxRWWrite      = ":rw:write"      // hash owner, token, proc: the writer
	sfxRWReaders    = ":rw:readers"    // zset "<owner>:<token>" → expiry
	sfxRWProcs      = ":rw:procs"      // zset "<owner>:<token> <holder record>" → expiry
	sfxRWQueue      = ":rw:queue"      // zset "r:<waiter>"/"w:<waiter>" → intent expiry
	sfxRWOrder      = ":rw:order"      // zset the same members → arrival number
	sfxRWSeq        = ":rw:seq"        // string: the arrival counter
	sfxSemPermits   = ":sem:permits"   // zset "<owner>:<token>" → expiry
	sfxSemN         = ":sem:n"         // string: N as stored by the first holder
	sfxSemProcs     = ":sem:procs"     // zset "<owner>:<token> <holder record>" → expiry
	sfxSemWaiters   = ":sem:waiters"   // zset waiter id → expiry
	sfxElect        = ":elect"         // hash owner, token, id, proc: the leader
	sfxElectWaiters = ":elect:waiters" // zset candidate id → expiry
	sfxWake         = ":wake"          // pub/sub channel (not a key)
)

// slotOf is Redis Cluster's key slot of a hash tag: CRC16-XMODEM mod 16384.
func slotOf(tag string) uint16 { return crc16(tag) & 16383 }

var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc16(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^s[i]]
	}
	return c
}

var (
	tagsOnce sync.Once
	tags     [16384]string
)

// slotTag returns the shortest decimal string whose slot is slot: the hash
// tag of that slot's token counter. The table is computed once per process
// (about 150 000 CRCs, a few milliseconds).
func slotTag(slot uint16) string {
	tagsOnce.Do(func() {
		left := len(tags)
		for i := 0; left > 0; i++ {
			s := strconv.Itoa(i)
			if sl := slotOf(s); tags[sl] == "" {
				tags[sl] = s
				left--
			}
		}
	})
	return tags[slot&16383]
}
