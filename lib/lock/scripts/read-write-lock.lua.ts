import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_FENCE, LUA_NOW_MS, WAKE_ALL } from './lua-snippets.js';

/*
 * Read/write lock layout (one hash tag):
 *   hash  rl:lock:{name}          'mode' -> 'read' | 'write'; holder '<owner>:r' / '<owner>:w' -> number of holds
 *   zset  rl:lock:{name}:leases   hold '<holder>#<hold id>' -> lease deadline (server ms), one per acquire call
 *   zset  rl:lock:{name}:writers  waiting writer -> liveness deadline; while any is live, new readers wait
 * Each hold (the outer one and every nested one of a lock section) has its own member and deadline:
 *  - an acquire, release or renewal that runs twice (a reply lost, the command re-sent) finds its
 *    own hold already there or already gone and changes nothing the second time;
 *  - a hold's renewal or a nested hold's short lease never shortens another hold of the same owner;
 *  - a crashed reader's hold ends at its own deadline even while other readers keep renewing theirs.
 * A holder field counts its live holds; the hash TTL is the longest lease granted, a backstop only.
 * A hash without 'mode' is an exclusive lock's owner hash: the read/write scripts refuse it ({-2, 0}).
 */

/** Lua: the holder field a hold member belongs to. */
const HOLDER_OF = `
local function holderOf(member)
  return string.match(member, '^([^#]*)#')
end
`;

/**
 * Lua: purgeExpired(hash, leases) drops the holds whose lease ended (and holders left without
 * holds), keeps 'mode' right, and deletes both keys when no hold is left.
 */
const PURGE_EXPIRED = `
local function purgeExpired(hash, leases)
  local expired = redis.call('zrangebyscore', leases, '-inf', now)
  if #expired == 0 then return end
  for _, member in ipairs(expired) do
    redis.call('zrem', leases, member)
    local holder = holderOf(member)
    if holder and redis.call('hexists', hash, holder) == 1 and redis.call('hincrby', hash, holder, -1) <= 0 then
      redis.call('hdel', hash, holder)
    end
  end
  if redis.call('zcard', leases) == 0 then
    redis.call('del', hash, leases)
  elseif redis.call('hget', hash, 'mode') == 'write' then
    local writer = false
    for _, f in ipairs(redis.call('hkeys', hash)) do
      if string.sub(f, -2) == ':w' then writer = true end
    end
    if not writer then redis.call('hset', hash, 'mode', 'read') end
  end
end
`;

/**
 * Lua (acquire scripts: KEYS[1] hash, KEYS[2] leases, KEYS[3] waiting writers): hold(holder,
 * member, lease) records a new hold of the holder field, changing no other hold's lease or count;
 * waitTime() is how long a refused caller may sleep at most (until the first lease or, on a free
 * lock held back for a waiting writer, that writer's liveness deadline could end).
 */
const HOLD = `
local function hold(holder, member, lease)
  redis.call('hincrby', KEYS[1], holder, 1)
  redis.call('zadd', KEYS[2], now + lease, member)
  if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], lease) end
  redis.call('pexpire', KEYS[2], math.max(redis.call('pttl', KEYS[1]), lease))
end
local function firstDeadline(key)
  local first = redis.call('zrange', key, 0, 0, 'WITHSCORES')
  if first[2] then return math.max(1, tonumber(first[2]) - now) end
  return false
end
local function waitTime()
  return firstDeadline(KEYS[2]) or firstDeadline(KEYS[3]) or 1
end
-- A nested acquire's section still holds a side (or this very attempt ran before: a re-send).
local function sectionHolds(owner, member)
  return redis.call('hexists', KEYS[1], owner .. ':r') == 1 or redis.call('hexists', KEYS[1], owner .. ':w') == 1
    or redis.call('zscore', KEYS[2], member) ~= false
end
local function purgeAll()
  purgeExpired(KEYS[1], KEYS[2])
  redis.call('zremrangebyscore', KEYS[3], '-inf', now)
end
`;

/**
 * Takes or re-enters a read hold. Writer preference: while a live writer waits, a new reader is
 * refused even when the lock is free or only read-held; only an owner already holding (nested
 * read, or a writer taking the read side) gets in.
 * KEYS[1] hash, KEYS[2] leases, KEYS[3] waiting writers, KEYS[4] fence
 * ARGV[1] owner, ARGV[2] lease ms, ARGV[3] hold id, ARGV[4] '1' when the owner comes from an
 * enclosing section (a nested acquire)
 * Returns {1, fencingToken}, {0, ms to sleep at most}, {-2, 0} when an exclusive lock holds the name,
 * or {0, -3} when a nested acquire finds its section's owner holding neither side any more.
 */
export const acquireReadLockScript = new RedisScript(
  'acquireReadLock',
  `${LUA_NOW_MS}${LUA_FENCE}${HOLDER_OF}${PURGE_EXPIRED}${HOLD}
purgeAll()
local lease = tonumber(ARGV[2])
local readField = ARGV[1] .. ':r'
local member = readField .. '#' .. ARGV[3]
local mode = redis.call('hget', KEYS[1], 'mode')
-- an exclusive lock holds the name (one name is one kind of lock): refused
if not mode and redis.call('exists', KEYS[1]) == 1 then return {-2, 0} end
if ARGV[4] == '1' and not sectionHolds(ARGV[1], member) then return {0, -3} end
if not mode then
  if redis.call('zcard', KEYS[3]) > 0 then return {0, waitTime()} end
  redis.call('del', KEYS[2])
  redis.call('hset', KEYS[1], 'mode', 'read')
  hold(readField, member, lease)
  return {1, nextFence(KEYS[4], lease)}
end
-- this very attempt ran before (its reply was lost): the hold is there
if redis.call('zscore', KEYS[2], member) then return {1, currentFence(KEYS[4], lease)} end
local nested = redis.call('hexists', KEYS[1], readField) == 1
local downgrade = mode == 'write' and redis.call('hexists', KEYS[1], ARGV[1] .. ':w') == 1
if nested or downgrade or (mode == 'read' and redis.call('zcard', KEYS[3]) == 0) then
  hold(readField, member, lease)
  return {1, currentFence(KEYS[4], lease)}
end
return {0, waitTime()}
`,
);

/**
 * Takes or re-enters the write hold.
 * KEYS[1] hash, KEYS[2] leases, KEYS[3] waiting writers, KEYS[4] fence
 * ARGV[1] owner, ARGV[2] lease ms, ARGV[3] writer liveness ms, ARGV[4] '1' to register as waiting,
 * ARGV[5] hold id, ARGV[6] '1' when the owner comes from an enclosing section (a nested acquire)
 * Returns {1, fencingToken}, {0, ms to sleep at most}, {-1, 0} when the caller holds only a read
 * hold (an upgrade, refused: two readers upgrading at once would deadlock), {-2, 0} when an
 * exclusive lock holds the name, or {0, -3} when a nested acquire finds its section's owner holding
 * neither side any more.
 */
export const acquireWriteLockScript = new RedisScript(
  'acquireWriteLock',
  `${LUA_NOW_MS}${LUA_FENCE}${HOLDER_OF}${PURGE_EXPIRED}${HOLD}
purgeAll()
local lease = tonumber(ARGV[2])
local writeField = ARGV[1] .. ':w'
local member = writeField .. '#' .. ARGV[5]
local mode = redis.call('hget', KEYS[1], 'mode')
-- an exclusive lock holds the name (one name is one kind of lock): refused
if not mode and redis.call('exists', KEYS[1]) == 1 then return {-2, 0} end
if ARGV[6] == '1' and not sectionHolds(ARGV[1], member) then return {0, -3} end
if not mode then
  redis.call('del', KEYS[2])
  redis.call('hset', KEYS[1], 'mode', 'write')
  hold(writeField, member, lease)
  redis.call('zrem', KEYS[3], ARGV[1])
  return {1, nextFence(KEYS[4], lease)}
end
-- this very attempt ran before (its reply was lost): the hold is there
if redis.call('zscore', KEYS[2], member) then return {1, currentFence(KEYS[4], lease)} end
if redis.call('hexists', KEYS[1], writeField) == 1 then
  hold(writeField, member, lease)
  return {1, currentFence(KEYS[4], lease)}
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
 * Releases one hold (read or write). A hold that is not there (released before: a re-sent
 * release; or its lease ended) changes nothing. Holds of others whose lease ended are purged too.
 * KEYS[1] hash, KEYS[2] leases, KEYS[3] wake channel; ARGV[1] hold member, ARGV[2] publish command
 * Returns -1 if this hold was not held, the holder's remaining holds if any, 0 when its last hold
 * ended. Every waiter is woken when the lock becomes free or stops being write-held.
 */
export const releaseReadWriteLockScript = new RedisScript(
  'releaseReadWriteLock',
  `${LUA_NOW_MS}${HOLDER_OF}${PURGE_EXPIRED}
local member = ARGV[1]
local holder = holderOf(member)
if redis.call('zrem', KEYS[2], member) == 0 then return -1 end
if redis.call('hexists', KEYS[1], holder) == 0 then return -1 end
local wasWrite = redis.call('hget', KEYS[1], 'mode') == 'write'
local left = redis.call('hincrby', KEYS[1], holder, -1)
if left <= 0 then
  redis.call('hdel', KEYS[1], holder)
  if string.sub(holder, -2) == ':w' then redis.call('hset', KEYS[1], 'mode', 'read') end
end
purgeExpired(KEYS[1], KEYS[2])
if redis.call('zcard', KEYS[2]) == 0 then
  redis.call('del', KEYS[1], KEYS[2])
  redis.call(ARGV[2], KEYS[3], '${WAKE_ALL}')
elseif wasWrite and redis.call('hget', KEYS[1], 'mode') ~= 'write' then
  redis.call(ARGV[2], KEYS[3], '${WAKE_ALL}')
end
return math.max(left, 0)
`,
);

/**
 * Renews read/write holds (watchdog batch, or `extend()` as a batch of one). Each hold has its own
 * deadline, so renewing one (even to a shorter lease) never changes another; running twice sets
 * the same deadline again. A hold whose lease already ended is not revived.
 * KEYS[2i-1] hash and KEYS[2i] leases of hold i; ARGV[1] lease ms, ARGV[i + 1] hold member.
 * Returns per hold 1 if renewed, 0 if no longer held.
 */
export const renewReadWriteLocksScript = new RedisScript(
  'renewReadWriteLocks',
  `${LUA_NOW_MS}${HOLDER_OF}
local lease = tonumber(ARGV[1])
local result = {}
for i = 1, #KEYS / 2 do
  local hash, leases, member = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 1]
  local deadline = redis.call('zscore', leases, member)
  if deadline and tonumber(deadline) > now and redis.call('hexists', hash, holderOf(member)) == 1 then
    redis.call('zadd', leases, now + lease, member)
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

/**
 * A writer that gave up waiting leaves the waiting writers; when it was the last one, every
 * parked reader is woken (they were held back only by it).
 * KEYS[1] waiting writers, KEYS[2] wake channel; ARGV[1] owner, ARGV[2] publish command
 */
export const leaveWritersScript = new RedisScript(
  'leaveReadWriteWriters',
  `
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 and redis.call('zcard', KEYS[1]) == 0 then
  redis.call(ARGV[2], KEYS[2], '${WAKE_ALL}')
end
return 0
`,
);
