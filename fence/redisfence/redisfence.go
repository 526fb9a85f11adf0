// Package redisfence is the fence for data kept in Redis: a Lua script
// that writes a value only when the write's fencing token passes the rule
// of fence.Accepts, atomically, and otherwise changes nothing and returns a
// *fence.StaleError wrapping baton.ErrStaleToken.
//
// # Keys
//
// Each resource has two keys sharing the hash tag {resource}, so they live
// in one hash slot and a Redis Cluster runs the script on one node:
//
//	<prefix>{<resource>}        the data: a string (Set) or a hash (HSet)
//	<prefix>{<resource>}:fence  the fence: a hash with fields token, owner
//
// Read the data with the usual commands on Keys(resource).Data. The fence
// hash never expires; the data key may (SetOptions.TTL), since a missing
// value is harmless but a missing fence would accept any token again.
//
// # What must hold on the server
//
// The fence is only as durable as the Redis it lives in. A fence hash lost
// to eviction (use maxmemory-policy noeviction or a volatile-* policy),
// to a restart without persistence (appendonly yes, appendfsync always for
// the strictest guarantee), to FLUSHALL, or to a failover onto a replica
// that had not received the last accepted write, forgets the highest token
// and lets a stale holder through. Use the same care as for the token
// counter itself; a fence in a SQL database (package fence) does not have
// this weakness.
//
// The client is the caller's: any redis.Scripter (*redis.Client,
// *redis.ClusterClient, redis.UniversalClient, a Ring). go-redis does not
// cut a blocked read at a context deadline unless the client was built
// with ContextTimeoutEnabled; a write whose reply is lost is unknown, not
// failed — retry it with the same token and owner, which the rule accepts
// as the same grant writing again.
package redisfence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/fence"
)

// Fence writes fenced values to Redis through Client. The zero Prefix is
// allowed (keys are then "{resource}" and "{resource}:fence"). A Fence is
// a plain value, safe for concurrent use as far as its client is.
type Fence struct {
	Client redis.Scripter
	Prefix string // prepended to every key; may not contain { or }
	// Observer, if set, is told of every write refused as stale
	// (baton.EventStaleRejected, as package fence reports it); nil
	// reports nothing.
	Observer baton.Observer
}

// Keys are the Redis keys of one resource.
type Keys struct {
	Data  string // the value (string or hash)
	Fence string // hash {token, owner}
}

// Keys returns the keys of resource. It does not validate resource; the
// write methods do.
func (f Fence) Keys(resource string) Keys {
	base := f.Prefix + "{" + resource + "}"
	return Keys{Data: base, Fence: base + ":fence"}
}

// SetOptions tunes Set.
type SetOptions struct {
	// TTL, when positive, expires the data key (never the fence). Zero
	// keeps the value until it is overwritten.
	TTL time.Duration
}

// The script. Tokens travel as decimal strings and are compared as such
// (length first, then bytes): Lua numbers are doubles and would round
// tokens above 2^53. KEYS[1] is the fence, KEYS[2] the data. ARGV: token,
// owner, force ("1": unfenced twin), mode ("set" or "hset"), then for set:
// value, ttl in ms ("0": none); for hset: field, value, ….
//
// It returns {1} when the value was written, {0, token, owner} with the
// stored fence when the write is stale.
const script = `
local tok, owner, force, mode = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if force ~= '1' then
	local cur = redis.call('HMGET', KEYS[1], 'token', 'owner')
	local st, so = cur[1], cur[2]
	if st then
		local greater = #tok > #st or (#tok == #st and tok > st)
		if not (greater or (tok == st and owner == so)) then
			return {0, st, so or ''}
		end
	end
end
redis.call('HSET', KEYS[1], 'token', tok, 'owner', owner)
if mode == 'set' then
	local ttl = tonumber(ARGV[6])
	if ttl > 0 then
		redis.call('SET', KEYS[2], ARGV[5], 'PX', ttl)
	else
		redis.call('SET', KEYS[2], ARGV[5])
	end
else
	redis.call('HSET', KEYS[2], unpack(ARGV, 5))
end
return {1}
`

var (
	fencedWrite = redis.NewScript(script)
	// readFence reads through a script too, so Fence needs nothing but a
	// redis.Scripter.
	readFence = redis.NewScript(`return redis.call('HMGET', KEYS[1], 'token', 'owner')`)
)

// Set stores value at the resource's data key when (token, owner) passes
// the fence, and advances the fence, in one script. A stale write returns
// a *fence.StaleError (errors.Is baton.ErrStaleToken) and changes nothing.
func (f Fence) Set(ctx context.Context, resource string, token uint64, owner string, value string, opts *SetOptions) error {
	var ttl int64
	if opts != nil && opts.TTL > 0 {
		ttl = max(opts.TTL.Milliseconds(), 1)
	}
	return f.run(ctx, resource, token, owner, false, "set", value, ttl)
}

// HSet sets fields (field, value pairs) of the resource's data hash when
// (token, owner) passes the fence, and advances the fence, in one script.
// Fields not named keep their values. A stale write returns a
// *fence.StaleError and changes nothing.
func (f Fence) HSet(ctx context.Context, resource string, token uint64, owner string, fields ...string) error {
	if len(fields) == 0 || len(fields)%2 != 0 {
		return fmt.Errorf("redisfence: HSet needs field, value pairs, got %d strings: %w", len(fields), baton.ErrInvalidOption)
	}
	args := make([]any, len(fields))
	for i, s := range fields {
		args[i] = s
	}
	return f.run(ctx, resource, token, owner, false, "hset", args...)
}

// Current returns the fence of resource: the last accepted (token, owner).
// A resource never written returns redis.Nil (test with errors.Is).
func (f Fence) Current(ctx context.Context, resource string) (uint64, string, error) {
	if err := f.check(resource); err != nil {
		return 0, "", err
	}
	vals, err := readFence.Run(ctx, f.Client, []string{f.Keys(resource).Fence}).Slice()
	if err != nil {
		return 0, "", fmt.Errorf("redisfence: fence of %q: %w", resource, err)
	}
	if len(vals) != 2 {
		return 0, "", fmt.Errorf("redisfence: unexpected fence reply %v", vals)
	}
	ts, _ := vals[0].(string)
	owner, _ := vals[1].(string)
	if vals[0] == nil {
		return 0, "", fmt.Errorf("redisfence: fence of %q: %w", resource, redis.Nil)
	}
	tok, err := strconv.ParseUint(ts, 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("redisfence: fence of %q holds token %q: %w", resource, ts, err)
	}
	return tok, owner, nil
}

func (f Fence) check(resource string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("redisfence: "+format+": %w", append(args, baton.ErrInvalidOption)...)
	}
	switch {
	case f.Client == nil:
		return bad("no client")
	case strings.ContainsAny(f.Prefix, "{}"):
		return bad("prefix %q contains { or }: the keys of a resource would not share a hash slot", f.Prefix)
	case resource == "":
		return bad("empty resource")
	case len(resource) > fence.MaxResourceLen:
		return bad("resource longer than %d bytes", fence.MaxResourceLen)
	case strings.HasPrefix(resource, "}"):
		// "{}…" is an empty hash tag: Redis would hash the whole key and
		// the data and the fence could land in different slots.
		return bad("resource %q starts with }", resource)
	}
	return nil
}

func (f Fence) run(ctx context.Context, resource string, token uint64, owner string, force bool, mode string, rest ...any) error {
	if err := f.check(resource); err != nil {
		return err
	}
	if owner == "" || len(owner) > fence.MaxOwnerLen || !utf8.ValidString(owner) {
		return fmt.Errorf("redisfence: owner must be 1 to %d bytes of UTF-8: %w", fence.MaxOwnerLen, baton.ErrInvalidOption)
	}
	k := f.Keys(resource)
	forceArg := "0"
	if force {
		forceArg = "1"
	}
	args := append([]any{strconv.FormatUint(token, 10), owner, forceArg, mode}, rest...)
	res, err := fencedWrite.Run(ctx, f.Client, []string{k.Fence, k.Data}, args...).Slice()
	if err != nil {
		return fence.WithCause(ctx, fmt.Errorf("redisfence: fenced %s of %q with token %d: %w", mode, resource, token, err))
	}
	if len(res) == 1 {
		return nil
	}
	if len(res) != 3 {
		return fmt.Errorf("redisfence: unexpected script reply %v", res)
	}
	st, _ := res[1].(string)
	so, _ := res[2].(string)
	stored, err := strconv.ParseUint(st, 10, 64)
	if err != nil {
		return errors.Join(fmt.Errorf("redisfence: fence of %q holds token %q", resource, st), err)
	}
	se := &fence.StaleError{Resource: resource, Token: token, Owner: owner, StoredToken: stored, StoredOwner: so}
	fence.Observe(ctx, f.Observer, se)
	return se
}

// Unfenced is the twin of Fence without the rule: every write lands and
// the fence records it, as an application that trusts its lock would. For
// negative controls only.
type Unfenced struct {
	Fence Fence
}

// Set is Fence.Set without the rule.
func (u Unfenced) Set(ctx context.Context, resource string, token uint64, owner string, value string, opts *SetOptions) error {
	var ttl int64
	if opts != nil && opts.TTL > 0 {
		ttl = max(opts.TTL.Milliseconds(), 1)
	}
	return u.Fence.run(ctx, resource, token, owner, true, "set", value, ttl)
}

// HSet is Fence.HSet without the rule.
func (u Unfenced) HSet(ctx context.Context, resource string, token uint64, owner string, fields ...string) error {
	if len(fields) == 0 || len(fields)%2 != 0 {
		return fmt.Errorf("redisfence: HSet needs field, value pairs, got %d strings: %w", len(fields), baton.ErrInvalidOption)
	}
	args := make([]any, len(fields))
	for i, s := range fields {
		args[i] = s
	}
	return u.Fence.run(ctx, resource, token, owner, true, "hset", args...)
}
