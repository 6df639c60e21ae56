import { RedisScript } from '../../redis/redis-script';
import { LUA_FENCE, LUA_NOW_MS, WAKE_ALL } from './lua-snippets';

/*
 * Read/write lock layout (one hash tag):
 *   hash  rl:lock:{name}          'mode' -> 'read' | 'write'; '<owner>:r' / '<owner>:w' -> reentry count
 *   zset  rl:lock:{name}:leases   holder field -> lease deadline (server ms)
 *   zset  rl:lock:{name}:writers  waiting writer -> liveness deadline; while any is live, new readers wait
 * Each holder has its own deadline so a crashed reader's hold ends even while other readers keep
 * renewing theirs (a single TTL on the hash would let it block writers forever).
 */

/** Lua: drop holders whose lease ended and writers that stopped waiting; fix or delete the hash. */
const PURGE_EXPIRED = `
local expired = redis.call('zrangebyscore', KEYS[2], '-inf', now)
for _, field in ipairs(expired) do
  redis.call('hdel', KEYS[1], field)
  redis.call('zrem', KEYS[2], field)
end
redis.call('zremrangebyscore', KEYS[3], '-inf', now)
if #expired > 0 then
  if redis.call('hlen', KEYS[1]) <= 1 then
    redis.call('del', KEYS[1], KEYS[2])
  elseif redis.call('hget', KEYS[1], 'mode') == 'write' then
    local fields = redis.call('hkeys', KEYS[1])
    local writer = false
    for _, f in ipairs(fields) do
      if string.sub(f, -2) == ':w' then writer = true end
    end
    if not writer then redis.call('hset', KEYS[1], 'mode', 'read') end
  end
end
`;

/** Lua: hold(field, lease, count): the holder field takes a hold (counted when count is true) and a new lease. */
const HOLD = `
local function hold(field, lease, count)
  if count or redis.call('hexists', KEYS[1], field) == 0 then redis.call('hincrby', KEYS[1], field, 1) end
  redis.call('zadd', KEYS[2], now + lease, field)
  if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], lease) end
  redis.call('pexpire', KEYS[2], math.max(redis.call('pttl', KEYS[1]), lease))
end
local function waitTime()
  local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
  if first[2] then return math.max(1, tonumber(first[2]) - now) end
  return 1
end
`;

/**
 * Takes or re-enters a read hold.
 * KEYS[1] hash, KEYS[2] leases, KEYS[3] waiting writers, KEYS[4] fence
 * ARGV[1] owner, ARGV[2] lease ms, ARGV[3] '1' to count a nested hold ('0': a fresh owner found
 * holding is a replayed attempt, taken as is)
 * Returns {1, fencingToken} or {0, ms to sleep at most}.
 */
export const acquireReadLockScript = new RedisScript(
  'acquireReadLock',
  `${LUA_NOW_MS}${LUA_FENCE}${PURGE_EXPIRED}${HOLD}
local lease = tonumber(ARGV[2])
local readField = ARGV[1] .. ':r'
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
  redis.call('hset', KEYS[1], 'mode', 'read')
  hold(readField, lease, true)
  return {1, nextFence(KEYS[4], lease)}
end
local reentry = redis.call('hexists', KEYS[1], readField) == 1
local downgrade = mode == 'write' and redis.call('hexists', KEYS[1], ARGV[1] .. ':w') == 1
local noWriterWaiting = redis.call('zcard', KEYS[3]) == 0
if reentry or downgrade or (mode == 'read' and noWriterWaiting) then
  hold(readField, lease, not reentry or ARGV[3] == '1')
  return {1, currentFence(KEYS[4], lease)}
end
return {0, waitTime()}
`,
);

/**
 * Takes or re-enters the write hold.
 * KEYS[1] hash, KEYS[2] leases, KEYS[3] waiting writers, KEYS[4] fence
 * ARGV[1] owner, ARGV[2] lease ms, ARGV[3] writer liveness ms, ARGV[4] '1' to register as waiting,
 * ARGV[5] '1' to count a nested hold ('0': a replayed attempt of a fresh owner, taken as is)
 * Returns {1, fencingToken}, {0, ms to sleep at most}, or {-1, 0} when the caller holds only a read
 * hold (an upgrade, refused: two readers upgrading at once would deadlock).
 */
export const acquireWriteLockScript = new RedisScript(
  'acquireWriteLock',
  `${LUA_NOW_MS}${LUA_FENCE}${PURGE_EXPIRED}${HOLD}
local lease = tonumber(ARGV[2])
local writeField = ARGV[1] .. ':w'
if redis.call('hexists', KEYS[1], writeField) == 1 then
  hold(writeField, lease, ARGV[5] == '1')
  return {1, currentFence(KEYS[4], lease)}
end
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
  redis.call('hset', KEYS[1], 'mode', 'write')
  hold(writeField, lease, true)
  redis.call('zrem', KEYS[3], ARGV[1])
  return {1, nextFence(KEYS[4], lease)}
end
if redis.call('hexists', KEYS[1], ARGV[1] .. ':r') == 1 then return {-1, 0} end
if ARGV[4] == '1' then
  redis.call('zadd', KEYS[3], now + tonumber(ARGV[3]), ARGV[1])
  redis.call('pexpire', KEYS[3], tonumber(ARGV[3]) * 2)
end
return {0, waitTime()}
`,
);

/**
 * Releases one level of a read or write hold.
 * KEYS[1] hash, KEYS[2] leases, KEYS[3] wake channel; ARGV[1] holder field, ARGV[2] publish command
 * Returns -1 if not held, the remaining count if still held, 0 when this hold ended.
 */
export const releaseReadWriteLockScript = new RedisScript(
  'releaseReadWriteLock',
  `
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end
local left = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if left > 0 then return left end
redis.call('hdel', KEYS[1], ARGV[1])
redis.call('zrem', KEYS[2], ARGV[1])
if redis.call('hlen', KEYS[1]) <= 1 then
  redis.call('del', KEYS[1], KEYS[2])
  redis.call(ARGV[2], KEYS[3], '${WAKE_ALL}')
elseif string.sub(ARGV[1], -2) == ':w' then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call(ARGV[2], KEYS[3], '${WAKE_ALL}')
end
return 0
`,
);

/**
 * Renews read/write holds (watchdog batch, or `extend()` as a batch of one).
 * KEYS[2i-1] hash and KEYS[2i] leases of hold i; ARGV[1] lease ms, ARGV[i + 1] holder field.
 * Returns per hold 1 if renewed, 0 if no longer held.
 */
export const renewReadWriteLocksScript = new RedisScript(
  'renewReadWriteLocks',
  `${LUA_NOW_MS}
local lease = tonumber(ARGV[1])
local result = {}
for i = 1, #KEYS / 2 do
  local hash, leases, field = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 1]
  local deadline = redis.call('zscore', leases, field)
  if redis.call('hexists', hash, field) == 1 and deadline and tonumber(deadline) > now then
    redis.call('zadd', leases, now + lease, field)
    if redis.call('pttl', hash) < lease then redis.call('pexpire', hash, lease) end
    if redis.call('pttl', leases) < lease then redis.call('pexpire', leases, lease) end
    result[i] = 1
  else
    result[i] = 0
  end
end
return result
`,
);
