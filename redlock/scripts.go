package redlock

import "github.com/redis/go-redis/v9"

// The scripts run on one node each; a node is a plain Redis server (not a
// Cluster), so one script may touch the lock key, the counter and the
// index together. Counter values are Lua numbers (doubles), exact only up
// to 2^53: acquireScript refuses (codeBadCounter) to mint from a counter
// that is negative or whose next token would pass 2^53, so a counter set
// by hand can never make tokens repeat, go back or wrap.
//
// Layout on node i (see the package doc):
//
//	<prefix>index       string: i, set once (SET NX) by the first client
//	<prefix>counter     string: the node's last minted or raised token, ≡ i (mod N) once raised
//	<prefix>lock:<name> hash {owner, token, grant, proc}, PX ttl (grant: the quorum token, from the first renewal or a write-back on)
//	<prefix>waiters:<name> zset: waiters "<client>.<n>" scored by arrival (ms, the waiter's clock)
//	<prefix>intents:<name> zset: the same waiters scored by expiry (ms, the node's clock)

// Result codes of acquireScript.
const (
	codeGranted    = 1
	codeHeld       = 0
	codeNoIndex    = -1 // the node has no index: wiped (restarted without persistence) or flushed
	codeWrongIndex = -2 // the node stores another index: nodes listed in another order
	codeBadCounter = -3 // the node's counter is negative or too close to 2^53 to mint
)

// acquireScript: KEYS lock, counter, index, waiters, intents; ARGV owner,
// ttl ms, i, N, init, waiter id, record, intent lifetime ms, waiter's
// arrival, holder record. It checks the node's index (setting it when
// init is "1" and it is missing: this client's first use of the node),
// then takes the lock key if absent and mints the node's next token: the
// smallest value above the counter that is ≡ i (mod N), refusing a
// counter that is not a number in 0…2^53-N. The key holds the holder
// record (engine.ProcessData) beside owner and token, so the extensions
// keep it and the release deletes it with the key. Returns {code, token
// or stored index or counter}.
//
// The mint is one INCRBY N: a counter ≡ i (mod N), as every mint and
// raise leaves it, moves to the next token. Its result is checked after:
// one out of phase (a new counter, or one set by hand) is set to the
// smallest token above its old value; one that was not an integer,
// negative, or that reached 2^53 (where doubles stop being exact) is put
// back (DECRBY is exact on the server) and judged by its stored text. A
// read before the write made two calls on every grant.
//
// With record "1" (a waiting acquire past its first attempt) a held lock
// also records the waiter: in the waiters set scored by its arrival (the
// same score on every node, so every node's release picks the same
// waiter) and in the intents set scored by its expiry on the node's clock
// (expired waiters are dropped from both), and the answer has a third
// element, the number of waiters, which spaces the waiter's polls. A
// grant removes the waiter. See wakeone.go. The grant comes first, before
// the functions only a waiter's refusal calls are defined: a script makes
// its local functions anew at every call.
var acquireScript = redis.NewScript(`
local idx = redis.call('GET', KEYS[3])
if not idx then
  if ARGV[5] ~= '1' then return {-1, 0} end
  redis.call('SET', KEYS[3], ARGV[3])
  idx = ARGV[3]
end
if idx ~= ARGV[3] then return {-2, idx} end
if redis.call('EXISTS', KEYS[1]) == 0 then
  local n = tonumber(ARGV[4])
  local i = tonumber(ARGV[3])
  local v = redis.pcall('INCRBY', KEYS[2], n)
  local c -- the counter before, when the token must be set from it
  if type(v) ~= 'number' or v < n or v >= 9007199254740992 then
    if type(v) == 'number' then redis.call('DECRBY', KEYS[2], n) end
    local s = redis.call('GET', KEYS[2]) or '0'
    c = tonumber(s)
    if not c or c < 0 or c + n > 9007199254740992 then return {-3, s} end
  elseif (v - i) % n ~= 0 then
    c = v - n
  end
  if c then
    v = c + 1
    v = v + ((i - v) % n)
    redis.call('SET', KEYS[2], string.format('%d', v))
  end
  local tok = string.format('%d', v)
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', tok, 'proc', ARGV[10])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if ARGV[7] == '1' then
    redis.call('ZREM', KEYS[4], ARGV[6])
    redis.call('ZREM', KEYS[5], ARGV[6])
  end
  return {1, tok}
end
if ARGV[7] ~= '1' then return {0, redis.call('PTTL', KEYS[1])} end
` + recordLua + `
record(KEYS[4], KEYS[5], ARGV[6], ARGV[9], ARGV[8])
return {0, redis.call('PTTL', KEYS[1]), redis.call('ZCARD', KEYS[4])}
`)

// raiseScript is the write-back to a lagging node: KEYS lock, counter;
// ARGV owner, token T, i, N. Only while the caller's own key is present,
// it raises the counter to the smallest value ≥ T that is ≡ i (mod N)
// (never lowers it) and records T as the grant's token. Returns 1 when raised, 0 when the
// key is gone or another owner's.
var raiseScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
local t = tonumber(ARGV[2])
local c = tonumber(redis.call('GET', KEYS[2]) or '0')
if c < t then
  local n = tonumber(ARGV[4])
  local i = tonumber(ARGV[3])
  redis.call('SET', KEYS[2], string.format('%d', t + ((i - t) % n)))
end
redis.call('HSET', KEYS[1], 'grant', ARGV[2])
return 1
`)

// renewScript: KEYS lock keys; ARGV ttl ms, then one owner per key, then
// one quorum token per key ("0" when unknown). Each key is extended with
// PEXPIRE only while it holds its owner: PEXPIRE never re-creates an
// expired key. There it also records the grant's quorum token, which the
// acquire could not know when it created the key (Inspect shows it).
// Returns one 1/0 per key.
var renewScript = redis.NewScript(`
local out = {}
local n = #KEYS
for k = 1, n do
  if redis.call('HGET', KEYS[k], 'owner') == ARGV[k + 1] then
    out[k] = redis.call('PEXPIRE', KEYS[k], ARGV[1])
    if ARGV[n + k + 1] ~= '0' then redis.call('HSET', KEYS[k], 'grant', ARGV[n + k + 1]) end
  else
    out[k] = 0
  end
end
return out
`)

// releaseScript: KEYS n lock keys, then their n waiters sets and their
// n intents sets; ARGV[1] the root of the clients' channels, ARGV[2] the
// node's index, then one owner per key. Deletes each key that still holds
// its owner, and nothing else. Returns how many.
//
// Each key deleted, or found absent, also hands the lock to its name's
// first live waiter "<client>-<node>.<n>" by arrival (see wakeone.go),
// removing it: the node its client listens on publishes n on the
// client's channel; the others only remove it, so every node moves on to
// the same next waiter. A node where the grant had no key (it answered
// after the round, or the key expired) takes part too: otherwise a waiter
// listening there would never be told. When PUBLISH reached nobody (the
// client is gone, or not subscribed yet) the listening node tries the
// next waiter.
//
// A grant that waited has the owner "<waiter>/<random>", and its release
// first removes that waiter from the node's sets. The node may still list
// it: its attempt found the key of another attempt there, recorded itself
// and won on the other nodes. Left first in line, it would be the waiter
// this node picks while the others pick the next, and every later release
// would pick one behind them: a waiter listening here would never be told.
//
// Every key is released, and every such waiter removed, before any waiter
// is woken, the same on every node; only a release that finds a waiter
// builds the functions that wake one (a script makes its local functions
// anew at every call): an uncontended release is HGET, DEL and EXISTS.
var releaseScript = redis.NewScript(`
local n = #ARGV - 2
local done, wake = 0, nil
for k = 1, n do
  local owner = ARGV[k + 2]
  local cur = redis.call('HGET', KEYS[k], 'owner')
  if cur == owner then
    done = done + redis.call('DEL', KEYS[k])
  end
  local own = string.match(owner, '^([^/]+)/')
  if own then
    redis.call('ZREM', KEYS[n + k], own)
    redis.call('ZREM', KEYS[2 * n + k], own)
  end
  -- Nobody waits: no clock read, no trim, no functions built.
  if (cur == owner or not cur) and redis.call('EXISTS', KEYS[n + k]) == 1 then
    wake = wake or {}
    wake[#wake + 1] = k
  end
end
if not wake then return done end
` + trimLua + `
local root = ARGV[1]
local function wakeone(w, e)
  trim(w, e)
  for _, m in ipairs(redis.call('ZRANGE', w, 0, 15)) do
    redis.call('ZREM', w, m)
    redis.call('ZREM', e, m)
    local cid, node, num = string.match(m, '^(.+%-(%d+))%.([^.]+)$')
    if cid then
      if node ~= ARGV[2] then return end
      if redis.call('PUBLISH', root .. cid, num) > 0 then return end
    end
  end
end
for _, k in ipairs(wake) do wakeone(KEYS[n + k], KEYS[2 * n + k]) end
return done
`)

// trimLua defines trim(w, e): it drops the waiters whose intent (in e,
// scored by expiry) has expired on the node's clock from both sets, and
// returns the node's time in ms.
const trimLua = `
local function trim(w, e)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local dead = redis.call('ZRANGEBYSCORE', e, '-inf', string.format('%d', now))
  for i = 1, #dead, 500 do
    local part = {unpack(dead, i, math.min(i + 499, #dead))}
    redis.call('ZREM', w, unpack(part))
    redis.call('ZREM', e, unpack(part))
  end
  return now
end
`

// recordLua defines trim and record(w, e, id, arrival, life): it records
// waiter id in the waiters set w scored by its arrival and in the
// intents set e scored by its expiry, life ms from the node's clock, and
// keeps both sets for at least life.
const recordLua = trimLua + `
local function record(w, e, id, arrival, life)
  local now = trim(w, e)
  redis.call('ZADD', e, string.format('%d', now + tonumber(life)), id)
  redis.call('ZADD', w, arrival, id)
  for _, k in ipairs({w, e}) do
    if redis.call('PTTL', k) < tonumber(life) then redis.call('PEXPIRE', k, life) end
  end
end
`

// unlockScript frees a failed attempt's key: KEYS lock, waiters,
// intents; ARGV owner, waiter id ("" for an attempt that records no
// waiter), arrival, intent lifetime ms. It deletes the key while it holds
// owner, wakes nobody (the lock was never held by a majority), and
// records the waiter as a refusal would have: the node granted this
// attempt, and its grant removed the waiter, so without it the node
// would wait for the waiter's next poll to list it again, and until then
// pick another first waiter than the other nodes at its releases (see
// wakeone.go). Returns 1 when it deleted the key.
var unlockScript = redis.NewScript(recordLua + `
local done = 0
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then done = redis.call('DEL', KEYS[1]) end
if ARGV[2] ~= '' then record(KEYS[2], KEYS[3], ARGV[2], ARGV[3], ARGV[4]) end
return done
`)

// indexScript: KEYS index; ARGV i. Sets the index when absent (SET NX)
// and returns what the node stores.
var indexScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
`)

// inspectScript: KEYS lock, counter, index, waiters, intents. Returns
// {owner, token, grant, pttl, counter, index, holder record, waiters}
// (false for what is missing), waiters being the live ones by arrival,
// flat: {id, arrival ms, ms left, …}. It writes nothing: expired waiters
// are skipped, not trimmed.
var inspectScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'owner', 'token', 'grant', 'proc')
local ws = {}
local all = redis.call('ZRANGE', KEYS[4], 0, -1, 'WITHSCORES')
for i = 1, #all, 2 do
  local e = redis.call('ZSCORE', KEYS[5], all[i])
  if e and tonumber(e) > now then
    table.insert(ws, all[i])
    table.insert(ws, all[i + 1])
    table.insert(ws, string.format('%d', tonumber(e) - now))
  end
end
return {h[1], h[2], h[3], redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]), redis.call('GET', KEYS[3]), h[4], ws}
`)
