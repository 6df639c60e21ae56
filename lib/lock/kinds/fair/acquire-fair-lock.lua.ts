import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_FENCE, LUA_NOW_MS, WAITING_MARK } from '../../protocols/lua-snippets.js';

/**
 * Takes or re-enters a fair lock: waiters are served in arrival order (as Redisson's fair lock).
 *
 * KEYS[1] owner hash, KEYS[2] fence, KEYS[3] queue (list of waiting owners),
 * KEYS[4] timeouts (zset owner -> liveness deadline, server ms), KEYS[5] wake channel
 * ARGV[1] owner, ARGV[2] lease ms, ARGV[3] waiter liveness ms, ARGV[4] '1' to join the queue
 * when not acquired ('0' for tryAcquire), ARGV[5] 'publish' or 'spublish', ARGV[6] '1' to count a
 * nested hold of an owner already holding ('0': a fresh owner found holding is a replayed attempt),
 * ARGV[7] this acquire call's hold id, recorded as its own field of the owner hash so a
 * re-sent nested acquire counts nothing (as in acquire-lock), ARGV[8] '1' for a caller already
 * waiting (its grant marks the new hash: others may still wait), optional
 *
 * WAITING_MARK: a refused waiter marks the owner hash; a grant marks the hash it creates when the
 * caller was queued (others may be queued behind it) or was waiting. A release wakes the queue's
 * head only from a marked hash.
 *
 * A waiter refreshes its deadline each time it runs this script; one whose deadline passed died
 * or gave up, and is dropped when it reaches the head, so a dead waiter never blocks the queue.
 * Each time a waiter writes its deadline, the queue and timeouts keys get that waiter's liveness as
 * TTL: every live waiter refreshes within its liveness, so the keys outlive every live waiter and
 * vanish once the last one died without leaving.
 * Returns {1, fencingToken}, {0, ms the caller may sleep at most}, {-2, 0} when a read/write lock
 * holds the name, or {0, -3} when a nested acquire finds its section's owner no longer holding.
 */
export const acquireFairLockScript = new RedisScript(
  'acquireFairLock',
  `
local owner = ARGV[1]
local lease = tonumber(ARGV[2])
local hold = ARGV[7]
-- A nested acquire: one more hold of the section's owner (counted once, even when re-sent).
if ARGV[6] == '1' then
  if redis.call('hexists', KEYS[1], 'mode') == 1 then return {-2, 0} end
  if redis.call('hexists', KEYS[1], owner) == 0 then return {0, -3} end
  if redis.call('hsetnx', KEYS[1], hold, 1) == 1 then redis.call('hincrby', KEYS[1], owner, 1) end
  if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], lease) end
  return {1, currentFence(KEYS[2], lease)}
end

local dropped = false
local head = redis.call('lindex', KEYS[3], 0)
while head do
  local deadline = redis.call('zscore', KEYS[4], head)
  if deadline and tonumber(deadline) > now then break end
  redis.call('lpop', KEYS[3])
  redis.call('zrem', KEYS[4], head)
  dropped = true
  head = redis.call('lindex', KEYS[3], 0)
end

-- a read/write lock holds the name (one name is one kind of lock): refused
if redis.call('hexists', KEYS[1], 'mode') == 1 then return {-2, 0} end

-- a fresh owner found holding: this very attempt ran before (its reply was lost)
if redis.call('hexists', KEYS[1], owner) == 1 then
  if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], lease) end
  return {1, currentFence(KEYS[2], lease)}
end

local free = redis.call('exists', KEYS[1]) == 0
if free and (not head or head == owner) then
  if head then
    redis.call('lpop', KEYS[3])
    redis.call('zrem', KEYS[4], owner)
  end
  if head or ARGV[8] == '1' then
    redis.call('hset', KEYS[1], owner, 1, hold, 1, '${WAITING_MARK}', 1)
  else
    redis.call('hset', KEYS[1], owner, 1, hold, 1)
  end
  redis.call('pexpire', KEYS[1], lease)
  return {1, freshFence(KEYS[2], lease, false)}
end

-- The lock is free for a live head that has not claimed it yet; if that head only became head
-- because dead waiters were dropped just now, nobody has told it: do so.
if free and dropped then redis.call(ARGV[5], KEYS[5], '@' .. head) end

if ARGV[4] == '1' then
  if not redis.call('zscore', KEYS[4], owner) then redis.call('rpush', KEYS[3], owner) end
  redis.call('zadd', KEYS[4], now + tonumber(ARGV[3]), owner)
  redis.call('pexpire', KEYS[3], ARGV[3])
  redis.call('pexpire', KEYS[4], ARGV[3])
end

if free then
  return {0, math.max(1, tonumber(redis.call('zscore', KEYS[4], head)) - now)}
end
if ARGV[4] == '1' then redis.call('hset', KEYS[1], '${WAITING_MARK}', 1) end
return {0, redis.call('pttl', KEYS[1])}
`,
  [LUA_NOW_MS, LUA_FENCE],
);
