package redislock

import "github.com/redis/go-redis/v9"

// The scripts. Every script touches only keys of one lock name and that
// name's slot counter (all in one hash slot), judges expiry by the
// server's clock (TIME, in milliseconds) and never by the client's, and
// formats numbers with %d (Lua's default %.14g would turn a large token
// or a millisecond timestamp into exponent notation).
//
// Acquire scripts share one argument layout:
//
//	ARGV[1] owner (random, one per attempt)   ARGV[5] "1": record the waiting intent
//	ARGV[2] lease time, ms                    ARGV[6] recipe detail (leader ID, N)
//	ARGV[3] waiter id (one per acquire call)  ARGV[7] channel to PUBLISH a grant on, or ""
//	ARGV[4] waiting intent lifetime, ms       ARGV[8] the holder record (engine.ProcessData)
//
// An attempt that records no intent (ARGV[5] "0": the first of an
// acquire, every TryLock's) sends "" as its waiter id: the scripts read
// the waiter only to record, find or drop its intent, and no intent is
// ever recorded under "".
//
// The holder record rides with the grant, in the same script: a hash
// grant (mutex, writer, leader) keeps it in the hash's field "proc", and
// a sorted-set grant (reader, permit) in a second sorted set beside the
// holders' ("<prefix>:{<name>}:rw:procs", ":sem:procs"), as the member
// "<owner>:<token> <record>" with the same expiry score, renewed and
// removed with the grant. (A record never holds a space: it is a URL
// query.) Only commands the scripts already used are used for it, so an
// ACL that admits baton's commands admits the record too.
//
// and answer {1, token} on a grant, {0, hint} otherwise, hint being the ms
// until the earliest expiry that could free the lock (-1: none known).
// The token is the slot counter's raw value: the client adds
// Options.TokenFloor, as every engine does.
//
// Lua numbers are doubles: past 2^53 an INCR's result is rounded, so
// tokens would repeat or go back without an error, and a negative counter
// would mint tokens ≤ 0. mint refuses a counter outside 0…2^53-1, with an
// error reply starting with "BATONCOUNTER", which every acquire script
// returns as is; the client maps it to ErrBadCounter. Nothing is written
// then: no grant, no wrap. It increments first and checks the result, one
// call where a read before the increment made two on every grant: a
// result in 1…2^53-1 is exact and proves the counter was in range; any
// other is undone (DECR is exact on the server) and the stored text
// judged, since 2^53 and 2^53+1 are the same double.

// The prelude's functions, each defined only in the scripts that call
// it: a script's local functions are made anew at every call, so the
// release, which needs three of them, no longer builds all eight.
const (
	fnTostr = "local function tostr(n) return string.format('%d', n) end\n"
	fnNowMs = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`
	fnExtend = `
local function extend(k, ms)
  if redis.call('PTTL', k) < tonumber(ms) then redis.call('PEXPIRE', k, ms) end
end
`
	fnMint = `
local function mint(ck)
  local t = redis.pcall('INCR', ck)
  if type(t) ~= 'number' then -- not an integer, or at the int64 limit: unchanged
  elseif t >= 1 and t < 9007199254740992 then return t
  else
    -- 2^53 and 2^53+1 are one double: undo the step (DECR is exact on
    -- the server) and judge the stored text, which is exact.
    redis.call('DECR', ck)
  end
  local c = redis.call('GET', ck)
  if c == '9007199254740991' then return redis.call('INCR', ck) end
  return redis.error_reply('BATONCOUNTER token counter ' .. ck .. ' holds ' .. c .. ', outside 0..2^53-1')
end
`
	fnTrim   = "local function trim(k, now) redis.call('ZREMRANGEBYSCORE', k, '-inf', tostr(now)) end\n"
	fnRecord = `
local function record(k, member, exp, ttl)
  redis.call('ZADD', k, exp, member .. ' ' .. ARGV[8])
  extend(k, ttl)
end
`
	fnIntent = `
local function intent(k, now)
  if ARGV[5] == '1' then
    redis.call('ZADD', k, tostr(now + tonumber(ARGV[4])), ARGV[3])
    extend(k, ARGV[4])
  end
end
`
	fnEarliest = `
local function earliest(k, now)
  local e = redis.call('ZRANGE', k, 0, 0, 'WITHSCORES')
  if e[2] then return tonumber(e[2]) - now end
  return -1
end
`
)

// prelude is every function of the prelude, for the scripts that use
// most of them.
const prelude = fnTostr + fnNowMs + fnExtend + fnMint + fnTrim + fnRecord + fnIntent + fnEarliest

// The mutex's grant is one string "<owner> <token> <holder record>" with
// the lease time as its expiry, so that its uncontended lock+unlock is the
// least a fenced lock costs on Redis: INCR and SET NX PX, then GET and DEL.
// As a hash (owner, token and record fields) it took HGET, INCR, HSET and
// PEXPIRE, then HGET, DEL and EXISTS of the waiters' set: seven commands
// where four do, each about 1.5 µs of the server's Lua machinery besides
// its own work. An owner holds no space (it is hex) nor does a record (a
// URL query), so the fields split at the first two spaces.
//
// " +" appended to the value says that somebody waits: the release wakes
// one and publishes only then, where the hash's release read the waiters'
// set every time. The attempts that record an intent set it: a refused
// one on the holder's value (APPEND keeps the expiry), and a waiter's
// grant on its own value when other intents remain. A caller's first
// attempt (TryLock's, or the first of a Lock, which records nothing) is
// granted without looking at the waiters: when waiters are queued then (a
// caller came first after a release woke one), the woken waiter's next
// attempt is refused and marks the value; a waiter that was not woken
// finds out at its next poll, as it would after any lost wake-up.
//
// The uncontended attempt mints before it knows the lock is free: a
// refused first attempt draws a token it does not use (tokens still
// increase, with a gap, as on MySQL). A waiter's attempt reads first, so a
// waiter's polls draw none.
//
// Another baton version's hash on the same key makes every script fail
// with WRONGTYPE, in either direction: the two layouts never grant the
// same lock twice.

// acquireMutex: KEYS[1] the holder string, KEYS[2] waiters, KEYS[3]
// counter. A refusal that records the intent answers a third element:
// the waiters' count, which spaces the waiter's polls (see wakeone.go).
// The uncontended path comes first and defines no function: a script
// makes its local functions anew at every call, and tostr and mint made
// for it cost about 0.5 µs of a 9.4 µs lock+unlock on the server. It is
// mint's usual case inline; a counter out of range is undone and left to
// mint, defined in that branch only, which judges it as every other
// attempt does.
var acquireMutex = redis.NewScript(`
if ARGV[5] ~= '1' then
  local t = redis.pcall('INCR', KEYS[3])
  if type(t) ~= 'number' or t < 1 or t >= 9007199254740992 then
    if type(t) == 'number' then redis.call('DECR', KEYS[3]) end
    ` + fnMint + `
    t = mint(KEYS[3])
    if type(t) == 'table' then return t end
  end
  if redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. string.format('%d', t) .. ' ' .. ARGV[8], 'NX', 'PX', ARGV[2]) then
    return {1, t}
  end
end
` + fnTostr + fnMint + `
local function held(cur)
  -- The holder's answer: a retried attempt (a client with MaxRetries)
  -- that was granted before gets its token; another holder is a refusal.
  if cur and string.sub(cur, 1, #ARGV[1] + 1) == ARGV[1] .. ' ' then
    local a = #ARGV[1] + 2
    return {1, tonumber(string.sub(cur, a, string.find(cur, ' ', a, true) - 1))}
  end
end
if ARGV[5] ~= '1' then return held(redis.call('GET', KEYS[1])) or {0, redis.call('PTTL', KEYS[1])} end
local cur = redis.call('GET', KEYS[1])
if not cur then
  local tok = mint(KEYS[3])
  if type(tok) == 'table' then return tok end
  local v = ARGV[1] .. ' ' .. tostr(tok) .. ' ' .. ARGV[8]
  redis.call('ZREM', KEYS[2], ARGV[3])
  if redis.call('EXISTS', KEYS[2]) == 1 then v = v .. ' +' end
  redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
  return {1, tok}
end
local mine = held(cur)
if mine then return mine end
if string.sub(cur, -2) ~= ' +' then redis.call('APPEND', KEYS[1], ' +') end
` + fnNowMs + fnExtend + fnTrim + fnIntent + `
local now = now_ms()
trim(KEYS[2], now)
intent(KEYS[2], now)
return {0, redis.call('PTTL', KEYS[1]), redis.call('ZCARD', KEYS[2])}
`)

// acquireHash: KEYS[1] the leader's hash (owner, token, id, proc),
// KEYS[2] candidates, KEYS[3] counter. The election. A refusal that
// records the intent answers a third element: the candidates' count, as
// the mutex's does.
// The uncontended path (a first attempt, recording nothing) is HGET, INCR,
// HSET and PEXPIRE: the candidates' set is touched only by acquires that
// wait. It comes first, before the functions only a candidate's attempt
// calls are defined.
var acquireHash = redis.NewScript(fnTostr + fnMint + `
local cur = redis.call('HGET', KEYS[1], 'owner')
if cur == ARGV[1] then
  -- A retried attempt (a client with MaxRetries) that was granted before.
  return {1, tonumber(redis.call('HGET', KEYS[1], 'token'))}
end
if not cur then
  local tok = mint(KEYS[3])
  if type(tok) == 'table' then return tok end
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', tostr(tok), 'id', ARGV[6], 'proc', ARGV[8])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if ARGV[5] == '1' then redis.call('ZREM', KEYS[2], ARGV[3]) end
  if ARGV[7] ~= '' then redis.call('PUBLISH', ARGV[7], 'granted') end
  return {1, tok}
end
if ARGV[5] ~= '1' then return {0, redis.call('PTTL', KEYS[1])} end
` + fnNowMs + fnExtend + fnTrim + fnIntent + `
local now = now_ms()
trim(KEYS[2], now)
intent(KEYS[2], now)
return {0, redis.call('PTTL', KEYS[1]), redis.call('ZCARD', KEYS[2])}
`)

// The read/write lock's scripts share KEYS: [1] writer hash, [2] readers
// (members "<owner>:<token>" scored by expiry), [3] the queue's intents
// ("r:<waiter>" or "w:<waiter>" scored by expiry), [4] the queue's order
// (the same members scored by arrival), [5] the arrival counter, [6] the
// token counter, [7] the readers' holder records. Grants follow the queue: a writer is granted when nobody
// holds the lock and nobody queued before it; a reader when no writer
// holds it and no writer queued before it. So a reader never overtakes a
// queued writer (writers are not starved) and a writer never overtakes a
// reader queued before it. A waiter that stops retrying drops out of the
// queue when its intent expires (one TTL).
const rwPrelude = `
local function rwtrim(now)
  trim(KEYS[2], now)
  trim(KEYS[7], now)
  local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', tostr(now))
  for i = 1, #dead, 500 do
    local part = {unpack(dead, i, math.min(i + 499, #dead))}
    redis.call('ZREM', KEYS[3], unpack(part))
    redis.call('ZREM', KEYS[4], unpack(part))
  end
end
local function ahead(me)
  local s = redis.call('ZSCORE', KEYS[4], me)
  if s then return redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. s) end
  return redis.call('ZRANGE', KEYS[4], 0, -1)
end
local function enqueue(me, now)
  if ARGV[5] ~= '1' then return end
  redis.call('ZADD', KEYS[3], tostr(now + tonumber(ARGV[4])), me)
  if not redis.call('ZSCORE', KEYS[4], me) then
    redis.call('ZADD', KEYS[4], redis.call('INCR', KEYS[5]), me)
  end
  extend(KEYS[3], ARGV[4])
  extend(KEYS[4], ARGV[4])
  extend(KEYS[5], ARGV[4])
end
local function dequeue(me)
  redis.call('ZREM', KEYS[3], me)
  redis.call('ZREM', KEYS[4], me)
  if redis.call('EXISTS', KEYS[4]) == 0 then redis.call('DEL', KEYS[5]) end
end
local function hint(now)
  local h = redis.call('PTTL', KEYS[1])
  if h < 0 then h = earliest(KEYS[2], now) end
  if h < 0 then h = earliest(KEYS[3], now) end
  return h
end
`

// acquireWrite: see rwPrelude.
var acquireWrite = redis.NewScript(prelude + rwPrelude + `
local now = now_ms()
rwtrim(now)
local me = 'w:' .. ARGV[3]
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  return {1, tonumber(redis.call('HGET', KEYS[1], 'token'))} -- a retried attempt
end
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[2]) == 0 and #ahead(me) == 0 then
  local tok = mint(KEYS[6])
  if type(tok) == 'table' then return tok end
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', tostr(tok), 'proc', ARGV[8])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  dequeue(me)
  return {1, tok}
end
enqueue(me, now)
return {0, hint(now)}
`)

// acquireRead: see rwPrelude.
var acquireRead = redis.NewScript(prelude + rwPrelude + `
local now = now_ms()
rwtrim(now)
local me = 'r:' .. ARGV[3]
local ok = redis.call('EXISTS', KEYS[1]) == 0
if ok then
  for _, m in ipairs(ahead(me)) do
    if string.sub(m, 1, 2) == 'w:' then ok = false break end
  end
end
if ok then
  local tok = mint(KEYS[6])
  if type(tok) == 'table' then return tok end
  local exp, member = tostr(now + tonumber(ARGV[2])), ARGV[1] .. ':' .. tostr(tok)
  redis.call('ZADD', KEYS[2], exp, member)
  extend(KEYS[2], ARGV[2])
  record(KEYS[7], member, exp, ARGV[2])
  dequeue(me)
  return {1, tok}
end
enqueue(me, now)
return {0, hint(now)}
`)

// acquirePermit: KEYS[1] permits, KEYS[2] stored N, KEYS[3] waiters,
// KEYS[4] counter, KEYS[5] the permits' holder records; ARGV[6] this
// client's N. Answers a third element: the
// N stored on the server (set by the first holder, kept while permits
// are held), for the disagreement check.
var acquirePermit = redis.NewScript(prelude + `
local now = now_ms()
trim(KEYS[1], now)
trim(KEYS[3], now)
trim(KEYS[5], now)
local stored = redis.call('GET', KEYS[2])
if redis.call('ZCARD', KEYS[1]) == 0 then stored = false end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[6]) then
  local tok = mint(KEYS[4])
  if type(tok) == 'table' then return tok end
  local exp, member = tostr(now + tonumber(ARGV[2])), ARGV[1] .. ':' .. tostr(tok)
  redis.call('ZADD', KEYS[1], exp, member)
  extend(KEYS[1], ARGV[2])
  record(KEYS[5], member, exp, ARGV[2])
  if not stored then
    redis.call('SET', KEYS[2], ARGV[6], 'PX', ARGV[2])
    stored = ARGV[6]
  else
    extend(KEYS[2], ARGV[2])
  end
  redis.call('ZREM', KEYS[3], ARGV[3])
  return {1, tok, tonumber(stored)}
end
intent(KEYS[3], now)
return {0, earliest(KEYS[1], now), tonumber(stored or ARGV[6])}
`)

// renew: KEYS[1] the lease's key; for a zset member, KEYS[2] the holder
// records and KEYS[3] (optional) a companion key whose expiry follows
// the lease's (a semaphore's N); ARGV[1] owner (hash) or member (zset),
// ARGV[2] lease time ms, ARGV[3] "h", "s" (a mutex's string, see
// acquireMutex) or "z", ARGV[4] the holder record.
// It extends only a lease that is still owned and unexpired on the
// server's clock, and never re-creates one: a missing key, another owner
// or an expired member answer 0. A hash's record is a field of the hash,
// so its PEXPIRE keeps it; a member's record gets the member's new score.
var renew = redis.NewScript(fnTostr + fnNowMs + fnExtend + `
if ARGV[3] == 'z' then
  local now = now_ms()
  local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if (not s) or tonumber(s) <= now then return 0 end
  local exp = tostr(now + tonumber(ARGV[2]))
  redis.call('ZADD', KEYS[1], 'XX', exp, ARGV[1])
  extend(KEYS[1], ARGV[2])
  if KEYS[2] then
    redis.call('ZADD', KEYS[2], 'XX', exp, ARGV[1] .. ' ' .. ARGV[4])
    extend(KEYS[2], ARGV[2])
  end
  if KEYS[3] then extend(KEYS[3], ARGV[2]) end
  return 1
end
if ARGV[3] == 's' then
  local v = redis.call('GET', KEYS[1])
  if not v or string.sub(v, 1, #ARGV[1] + 1) ~= ARGV[1] .. ' ' then return 0 end
elseif redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// release: KEYS[1] the lease's key; for a zset member ("z"), KEYS[2] the
// holder records and KEYS[3] (optional) a companion key, both deleted
// with the last member; for a hash ("h"), KEYS[2] (optional) the waiters'
// set of an election; for a mutex's string (see acquireMutex), KEYS[2]
// its waiters' set ("m") or nothing ("s", a client whose releases wake
// nobody alone). ARGV[1] owner, ARGV[2] "h", "z", "m" or "s",
// ARGV[3] the channel to PUBLISH the release on, ARGV[4] the root of the
// clients' channels, ARGV[5] "1" when PUBLISH's answer counts every
// subscriber; a zset member's release only: ARGV[6] the member ("" when
// the grant's token is unknown: then every member of the owner), ARGV[7]
// the holder record. The others send five arguments: the record, a
// hundred bytes or more, was copied into every mutex release's ARGV for
// nothing. Only the owner's entry is removed: a stale or repeated release
// of an older grant never frees a newer one. A hash's record goes with
// the hash.
//
// A released mutex or leadership also wakes one waiter (see wakeone.go):
// the oldest live intent of a waiter that can be woken ("<client>.<n>";
// others, of clients without pub/sub, poll) is removed from the set and
// its number published on its client's channel. When PUBLISH reached
// nobody (its client is gone) and the count is trusted (not a Cluster,
// where it counts one node's subscribers), the next is tried. The name's
// channel is published on too, for watchers of the whole name; a mutex's
// ("m") only when its value says somebody waits: the only watchers of a
// mutex's channel are its waiters, and each records its intent, which
// marks the value, before it waits (the first attempt records none, but a
// refused one is followed at once by one that does, see attempts). An
// uncontended release is then GET and DEL, without a PUBLISH that reached
// nobody, and it returns before the script builds its local functions.
var release = redis.NewScript(`
local removed, waiting = 0, false
if ARGV[2] == 'm' or ARGV[2] == 's' then
  -- A mutex's string: the owner's own, or nothing to do. An uncontended
  -- release ends here, before the functions below are built: nobody
  -- waits, so no clock read, no trim, and no watcher of the channel.
  local v = redis.call('GET', KEYS[1])
  if not v or string.sub(v, 1, #ARGV[1] + 1) ~= ARGV[1] .. ' ' then return 0 end
  removed = redis.call('DEL', KEYS[1])
  waiting = string.sub(v, -2) == ' +'
  if not waiting and ARGV[2] == 'm' then return removed end
elseif ARGV[2] == 'h' then
  -- A hash: the owner's own, or nothing to do.
  if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
  removed = redis.call('DEL', KEYS[1])
  if removed > 0 and KEYS[2] then waiting = redis.call('EXISTS', KEYS[2]) == 1 end
end
` + fnTostr + fnNowMs + fnTrim + `
local function wakeone(k)
  trim(k, now_ms())
  for _, m in ipairs(redis.call('ZRANGE', k, 0, 15)) do
    local cid, num = string.match(m, '^(.+)%.([^.]+)$')
    if cid then
      redis.call('ZREM', k, m)
      if redis.call('PUBLISH', ARGV[4] .. cid, num) > 0 or ARGV[5] ~= '1' then return end
    end
  end
end
local function remove_owned(k)
  local n, p = 0, ARGV[1] .. ':'
  for _, m in ipairs(redis.call('ZRANGE', k, 0, -1)) do
    if string.sub(m, 1, #p) == p then n = n + redis.call('ZREM', k, m) end
  end
  return n
end
if ARGV[2] == 'z' then
  if ARGV[6] ~= '' then
    removed = redis.call('ZREM', KEYS[1], ARGV[6])
    if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[6] .. ' ' .. ARGV[7]) end
  else
    removed = remove_owned(KEYS[1])
    if KEYS[2] then remove_owned(KEYS[2]) end
  end
  if removed > 0 and KEYS[2] and redis.call('EXISTS', KEYS[1]) == 0 then
    redis.call('DEL', KEYS[2])
    if KEYS[3] then redis.call('DEL', KEYS[3]) end
  end
elseif waiting and KEYS[2] and ARGV[4] ~= '' then
  wakeone(KEYS[2])
end
if removed > 0 then redis.call('PUBLISH', ARGV[3], 'released') end
return removed
`)

// inspect reads every entry of one name that has not expired on the
// server's clock. KEYS: mutex, mutex waiters, rw writer, rw readers, rw
// queue (intents), rw queue (order), permits, stored N, permit waiters,
// leader, candidates, readers' records, permits' records. Answers
// {rows, N} where a row is {recipe, role, owner, token, leader id, ms
// left, holder record}. Waiters come in the order they are served: the
// read/write lock's by arrival, the others' by their intent's expiry (the
// oldest first, as a release picks them).
var inspect = redis.NewScript(prelude + `
local now = now_ms()
local out = {}
local function records(k)
  local r = {}
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', k, '(' .. tostr(now), '+inf')) do
    local j = string.find(m, ' ', 1, true)
    if j then r[string.sub(m, 1, j - 1)] = string.sub(m, j + 1) end
  end
  return r
end
local function hash(k, recipe)
  local v = redis.call('HMGET', k, 'owner', 'token', 'id', 'proc')
  if v[1] then
    table.insert(out, {recipe, 'holder', v[1], v[2] or '0', v[3] or '', redis.call('PTTL', k), v[4] or ''})
  end
end
local function str(k, recipe)
  -- A mutex's "<owner> <token> <record>[ +]" (see acquireMutex); the
  -- hash of an older layout is read as a hash.
  local v = redis.pcall('GET', k)
  if type(v) == 'table' then return hash(k, recipe) end
  if not v then return end
  local i = string.find(v, ' ', 1, true) or #v + 1
  local j = string.find(v, ' ', i + 1, true) or #v + 1
  local rec = string.sub(v, j + 1)
  if string.sub(rec, -2) == ' +' then rec = string.sub(rec, 1, -3) end
  local tok = string.sub(v, i + 1, j - 1)
  if tok == '' then tok = '0' end
  table.insert(out, {recipe, 'holder', string.sub(v, 1, i - 1), tok, '', redis.call('PTTL', k), rec})
end
local function zset(k, recipe, role, recs)
  local m = redis.call('ZRANGEBYSCORE', k, '(' .. tostr(now), '+inf', 'WITHSCORES')
  for i = 1, #m, 2 do
    local owner, tok = m[i], '0'
    if role == 'holder' then
      local j = string.find(m[i], ':', 1, true)
      if j then owner, tok = string.sub(m[i], 1, j - 1), string.sub(m[i], j + 1) end
    end
    table.insert(out, {recipe, role, owner, tok, '', tonumber(m[i + 1]) - now, (recs and recs[m[i]]) or ''})
  end
end
str(KEYS[1], 'mutex')
zset(KEYS[2], 'mutex', 'waiting')
hash(KEYS[3], 'write')
zset(KEYS[4], 'read', 'holder', records(KEYS[12]))
for _, m in ipairs(redis.call('ZRANGE', KEYS[6], 0, -1)) do
  local e = redis.call('ZSCORE', KEYS[5], m)
  if e and tonumber(e) > now then
    local recipe = 'read'
    if string.sub(m, 1, 2) == 'w:' then recipe = 'write' end
    table.insert(out, {recipe, 'waiting', string.sub(m, 3), '0', '', tonumber(e) - now, ''})
  end
end
zset(KEYS[7], 'permit', 'holder', records(KEYS[13]))
zset(KEYS[9], 'permit', 'waiting')
hash(KEYS[10], 'leader')
zset(KEYS[11], 'leader', 'waiting')
return {out, redis.call('GET', KEYS[8]) or ''}
`)
