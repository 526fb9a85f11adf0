package redislock

import (
	"context"
	"fmt"
	"github.com/baton-go/baton/internal/rediseval"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton/engine/leasekit/keeper"
)

// store is the keeper.Store of a Client: batched owner-checked renewals
// and releases, each batch one pipeline of EVALSHAs (one round trip; a
// Cluster client splits it per node).
type store struct {
	c    *Client
	warm *warmConn // the renewals' connection, shared with rdb's other Clients; nil: none
}

var _ keeper.Store = (*store)(nil)

// aux is what a keeper.Ref of this engine carries: how the lease is kept.
// It is shared by every grant of one lock object that needs no member (see
// spec.ref), so it is never changed once built; its keys and channel are
// boxed once for evalsha.
type aux struct {
	zset      bool   // the lease is a member of a sorted set (reader, permit), else a hash's or a mutex's owner
	member    string // the zset member "<owner>:<token>"; "" when the token is unknown (abandoned attempt)
	procs     string // a member's holder records (see scripts.go), or ""
	companion string // a key whose expiry follows the lease's (a semaphore's stored N), or ""
	wake      string // the name's channel
	waiters   string // a mutex's or an election's waiters, for the release to wake one (wakeone.go), or ""
	mutex     bool   // a mutex's string (see acquireMutex), not a hash
	// keys are the release's and renewal's KEYS: the lease's key, then a
	// member's records and companion, or a hash's waiters.
	keys    []string
	boxed   []any // keys, boxed
	wakeArg any   // wake, boxed
}

// newAux is the aux of the leases on key: members of a sorted set with
// their records in procs when zset, else a hash's owners.
func newAux(key string, zset bool, procs, companion, wake, waiters string) *aux {
	a := new(aux)
	a.init(nil, nil, key, zset, procs, companion, wake, waiters)
	return a
}

// init sets a as newAux describes, its keys appended to keys and boxed
// into boxed: arrays beside a when a is part of a spec's block.
func (a *aux) init(keys []string, boxed []any, key string, zset bool, procs, companion, wake, waiters string) {
	*a = aux{zset: zset, procs: procs, companion: companion, wake: wake, waiters: waiters}
	a.wakeArg = &a.wake // a copy of a (withMember) points at the same channel
	keys = append(keys, key)
	switch {
	case zset && procs != "":
		keys = append(keys, procs)
		if companion != "" {
			keys = append(keys, companion)
		}
	case !zset && waiters != "":
		keys = append(keys, waiters)
	}
	a.keys, a.boxed = keys, boxPointers(boxed, keys)
}

// mode is the release script's ARGV[2] for a's leases.
func (a *aux) mode() any {
	switch {
	case a.zset:
		return modeZ
	case a.mutex && a.waiters != "":
		return modeM
	case a.mutex:
		return modeS
	}
	return modeH
}

// withMember is a copy of a naming the zset member m.
func (a *aux) withMember(m string) *aux {
	b := *a
	b.member = m
	return &b
}

// auxOf is r's aux; a Ref not made by spec.ref is a hash's owner on r.Key.
func auxOf(r keeper.Ref) *aux {
	if a, _ := r.Aux.(*aux); a != nil {
		return a
	}
	return newAux(r.Key, false, "", "", "", "")
}

func (s *store) BatchSize() int { return s.c.o.BatchSize }

// pipelined runs one EVALSHA per ref in one pipeline and returns the
// replies as integers. A NOSCRIPT (script cache flushed, failover onto a
// server that never saw the script) loads the script and runs the batch
// once more: renew and release are idempotent.
// With warm set (renewals) the batch goes on its warm connection when free.
func (s *store) pipelined(ctx context.Context, warm *warmConn, sc rediseval.Script, refs []keeper.Ref, args func(keeper.Ref, *aux) []any) ([]int64, error) {
	if s.c.direct(ctx) {
		return s.runOn(ctx, warm, sc, refs, args)
	}
	// The call may outlive this function (see Client.call) and the keeper
	// reuses its slice for the next batch: work on a copy.
	refs = append([]keeper.Ref(nil), refs...)
	var out []int64
	err := s.c.call(ctx, func(ctx context.Context) error {
		res, err := s.runOn(ctx, warm, sc, refs, args)
		if err == nil {
			out = res // read by the caller only when call returns nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// runOn runs the batch on warm's connection, if warm is set and it is
// free, else on the client.
func (s *store) runOn(ctx context.Context, warm *warmConn, sc rediseval.Script, refs []keeper.Ref, args func(keeper.Ref, *aux) []any) (res []int64, err error) {
	if warm == nil {
		return s.run(ctx, s.c.rdb, sc, refs, args)
	}
	err = warm.run(ctx, s.c, func(cn conn) error {
		res, err = s.run(ctx, cn, sc, refs, args)
		return err
	})
	return res, err
}

// run is pipelined's round trip on cn. One ref (a lease's own release) is
// a plain EVALSHA, without a pipeline's bookkeeping.
func (s *store) run(ctx context.Context, cn conn, sc rediseval.Script, refs []keeper.Ref, args func(keeper.Ref, *aux) []any) ([]int64, error) {
	if len(refs) != 1 {
		return s.evalAll(ctx, cn, sc, refs, args)
	}
	r, a := refs[0], auxOf(refs[0])
	v, err := rediseval.Run(ctx, cn, sc, a.keys, a.boxed, args(r, a)...).Int64()
	if err != nil {
		return nil, err
	}
	return []int64{v}, nil
}

// evalAll sends one EVALSHA per ref in one pipeline; a NOSCRIPT loads the
// script and sends the batch once more.
func (s *store) evalAll(ctx context.Context, cn conn, sc rediseval.Script, refs []keeper.Ref, args func(keeper.Ref, *aux) []any) ([]int64, error) {
	for try := 0; ; try++ {
		cmds := make([]*redis.Cmd, len(refs))
		_, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, r := range refs {
				a := auxOf(r)
				cmds[i] = p.EvalSha(ctx, sc.Hash(), a.keys, args(r, a)...)
			}
			return nil
		})
		noScript := false
		for _, cmd := range cmds {
			if cmd != nil && isNoScript(cmd.Err()) {
				noScript = true
			}
		}
		if noScript && try == 0 {
			if err := sc.Load(ctx, cn).Err(); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		res := make([]int64, len(cmds))
		for i, cmd := range cmds {
			v, err := cmd.Int64()
			if err != nil {
				return nil, err
			}
			res[i] = v
		}
		return res, nil
	}
}

func isNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

func (s *store) Renew(ctx context.Context, refs []keeper.Ref, ttl time.Duration) ([]bool, error) {
	ms := ttl.Milliseconds()
	res, err := s.pipelined(ctx, s.warm, evRenew, refs, func(r keeper.Ref, a *aux) []any {
		if a.zset {
			return []any{a.member, ms, "z", s.c.procArg}
		}
		if a.mutex {
			return []any{r.Owner, ms, modeS}
		}
		return []any{r.Owner, ms, modeH}
	})
	if err != nil {
		return nil, fmt.Errorf("redislock: renew: %w", err)
	}
	renewed := make([]bool, len(res))
	for i, v := range res {
		renewed[i] = v == 1
	}
	return renewed, nil
}

func (s *store) Release(ctx context.Context, refs []keeper.Ref) error {
	var err error
	switch {
	case len(refs) == 0:
		return nil
	case len(refs) == 1 && s.c.direct(ctx):
		err = s.releaseOne(ctx, refs[0]) // a lease's own release
	default:
		_, err = s.pipelined(ctx, nil, evRelease, refs, func(r keeper.Ref, a *aux) []any { return s.releaseArgs(new([7]any), r, a) })
	}
	if err != nil {
		return fmt.Errorf("redislock: release: %w", err)
	}
	for _, r := range refs {
		s.c.hub.wake(auxOf(r).wake)
	}
	return nil
}

// releaseArgs puts the release script's arguments for r in buf and
// returns them: a zset member's seven, five for the others (see release).
func (s *store) releaseArgs(buf *[7]any, r keeper.Ref, a *aux) []any {
	buf[0], buf[1], buf[2], buf[3], buf[4] = r.Owner, a.mode(), a.wakeArg, s.c.wo.rootArg, s.c.wo.countOK
	if !a.zset {
		return buf[:5]
	}
	buf[5], buf[6] = a.member, s.c.procArg
	return buf[:]
}

// releaseOne is Release of one ref on the caller's goroutine: one
// EVALSHA whose argument list stays on the stack, where pipelined's
// argument func and result slice cost three allocations per release.
func (s *store) releaseOne(ctx context.Context, r keeper.Ref) error {
	a := auxOf(r)
	var buf [7]any
	return rediseval.Run(ctx, s.c.rdb, evRelease, a.keys, a.boxed, s.releaseArgs(&buf, r, a)...).Err()
}
