package redislock

import (
	"strconv"

	"github.com/baton-go/baton/engine/leasekit"
	"github.com/baton-go/baton/engine/leasekit/keeper"
	"github.com/baton-go/baton/internal/rediseval"
)

// spec is one recipe's side of an acquire: which script, on which keys,
// and how the grant is kept. It is built once per Mutex or RWMutex
// (Bind), and per acquire for the other recipes, in one block with its
// keys and their boxes (see specBlock).
type spec struct {
	script  rediseval.Script
	keys    []string
	boxed   []any  // keys, boxed
	detail  string // ARGV[6]
	publish string // ARGV[7]: channel to publish a grant on
	waiters string // the zset of waiting intents (mutex, permits, leader)
	// detailArg and publishArg are detail and publish, boxed.
	detailArg, publishArg any
	// queued: the read/write lock's queue, keys[2] (intents) and keys[3]
	// (order), members waiterPrefix + waiter id.
	queued       bool
	waiterPrefix string
	wake         string // the name's channel
	// zset: the grant is a member "<owner>:<token>" of keys[zsetKey], its
	// holder record in procs; else the owner of keys[0] (a mutex's
	// string, another recipe's hash).
	zset      bool
	zsetKey   int
	procs     string
	companion string
	// aux is the Aux of every ref of a hash grant, and of a zset grant's
	// while its token is unknown (see ref).
	aux *aux
	// onReply, if set, sees every script reply (the semaphore's N check).
	onReply func([]any)
	// one: this client's waiters are woken one at a time (wakeone.go).
	one bool
	// wakes: the grant's release wakes the first of the waiters' set
	// (wakeone.go), which goes with the grant to the release script.
	wakes bool
}

// specBlock is a lock object's spec with its aux, its keys and their
// boxes, in one allocation; the keys are substrings of one string
// (packKeys), and the boxes hold pointers to the keys beside them, which
// go-redis writes (and routes a Cluster command by) as the strings. A
// lock takes its keys from these objects on every acquire and release:
// built apart (27 allocations per Mutex), over a thousand names the
// loads missed the cache often enough to cost about 3 µs of client CPU
// per lock+unlock (32 clients, 1,000 names each), which bsm/redislock,
// building its one key per call, does not pay.
type specBlock struct {
	s      spec
	a      aux
	keys   [7]string // the most keys of a script: the read/write lock's
	boxed  [7]any
	akeys  [3]string // the release's and renewal's keys (aux)
	aboxed [3]any
}

// specFor describes the keys and script of the acquire req (see keys.go
// for the layout).
func (c *Client) specFor(req *leasekit.Request) *spec {
	blk := new(specBlock)
	s := &blk.s
	c.fillSpec(blk, req)
	s.boxed = boxPointers(blk.boxed[:0], s.keys)
	s.detailArg, s.publishArg = s.detail, s.publish
	key := s.keys[0]
	if s.zset {
		key = s.keys[s.zsetKey]
	}
	waiters := ""
	if s.wakes {
		waiters = s.waiters
	}
	blk.a.init(blk.akeys[:0], blk.aboxed[:0], key, s.zset, s.procs, s.companion, s.wake, waiters)
	blk.a.mutex = req.Kind == leasekit.KindMutex
	s.aux = &blk.a
	return s
}

// fillSpec sets blk's spec for req: its script, its keys (in blk) and
// what is named by them.
func (c *Client) fillSpec(blk *specBlock, req *leasekit.Request) {
	s, k := &blk.s, blk.keys[:]
	switch req.Kind {
	case leasekit.KindRead, leasekit.KindWrite:
		wake := c.packKeys(req.Name, k, sfxRWWrite, sfxRWReaders, sfxRWQueue, sfxRWOrder, sfxRWSeq, keyCounter, sfxRWProcs)
		*s = spec{script: evAcquireWrite, keys: k[:7], wake: wake, queued: true, waiterPrefix: "w:"}
		if req.Kind == leasekit.KindRead {
			s.script, s.zset, s.zsetKey, s.procs, s.waiterPrefix = evAcquireRead, true, 1, k[6], "r:"
		}
	case leasekit.KindPermit:
		wake := c.packKeys(req.Name, k, sfxSemPermits, sfxSemN, sfxSemWaiters, keyCounter, sfxSemProcs)
		n := k[1]
		*s = spec{
			script: evAcquirePermit, keys: k[:5], detail: strconv.Itoa(req.N),
			waiters: k[2], wake: wake, zset: true, procs: k[4], companion: n,
			onReply: func(v []any) { storedN(req, n, v) },
		}
	case leasekit.KindLeader:
		wake := c.packKeys(req.Name, k, sfxElect, sfxElectWaiters, keyCounter)
		*s = spec{
			script: evAcquireHash, keys: k[:3], detail: req.ID, publish: wake,
			waiters: k[1], wake: wake, one: c.wo.on, wakes: c.wo.wakes,
		}
	default:
		wake := c.packKeys(req.Name, k, sfxMutex, sfxMutexWaiters, keyCounter)
		*s = spec{script: evAcquireMutex, keys: k[:3], waiters: k[1], wake: wake, one: c.wo.on, wakes: c.wo.wakes}
	}
}

// storedN reports the N a permit script answered (the one stored by the
// holders, in key) when it is not req's: each stored N once per
// Semaphore.
func storedN(req *leasekit.Request, key string, v []any) {
	if len(v) < 3 {
		return
	}
	stored, _ := v[2].(int64)
	if stored == 0 || int(stored) == req.N {
		return
	}
	req.Seen([]leasekit.Permits{{ID: strconv.FormatInt(stored, 10), Lease: key, N: int(stored)}}, false)
}

// ref is how the keeper renews and releases the grant of owner. A hash
// grant, and a zset grant whose token is unknown, share the spec's aux; a
// known zset grant's names its member.
func (s *spec) ref(owner string, token uint64, known bool) keeper.Ref {
	a := s.aux
	if s.zset && known {
		a = a.withMember(owner + ":" + strconv.FormatUint(token, 10))
	}
	return keeper.Ref{Key: a.keys[0], Owner: owner, Aux: a}
}
