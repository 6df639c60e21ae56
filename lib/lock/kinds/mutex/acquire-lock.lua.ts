import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_FENCE, WAITING_MARK } from '../../protocols/lua-snippets.js';

/**
 * Takes or re-enters a reentrant lock.
 *
 * KEYS[1] owner hash  `rl:lock:{name}`          owner -> reentry count, and `<owner>/<n>` -> 1 per open hold
 * KEYS[2] fence       `rl:lock:{name}:fence`    fencing counter (LUA_FENCE), stepped on every fresh acquire
 * ARGV[1] owner id, ARGV[2] lease in ms, ARGV[3] '1' if the owner comes from an enclosing section
 * (count a nested hold), '0' for a fresh owner (finding it means a replayed attempt: count nothing),
 * ARGV[4] optional: 'counter' for Redlock masters: the fence's clock floor in whole seconds, so
 * masters asked at once agree on it (LUA_FENCE)
 * ARGV[5] this acquire call's hold id (`<owner>/<n>`), recorded as its own field. A nested
 * acquire whose hold is recorded already is this very acquire run again (its reply was lost and
 * ioredis re-sent it): it counts nothing, so the owner's count is always the number of its holds.
 * ARGV[6] optional, who is trying (see WAITING_MARK): 'wait' a caller that waits if refused (a
 * refusal marks the hash), 'waiting' a caller already waiting (a refusal marks the hash, and so
 * does a grant: others may still wait); absent or '' (tryAcquire, Redlock masters): never marks.
 *
 * Returns {1, fencingToken} when held by the caller afterwards, {0, pttl} when another owner holds it
 * (pttl is how long the caller may sleep at most before the lease could have run out), {-2, 0} when a
 * read/write lock holds the name, {0, -3} when a nested acquire finds its section's owner no longer
 * holding (the section's hold was lost: it is never taken afresh under that owner with a new token).
 */
export const acquireLockScript = new RedisScript(
  'acquireLock',
  `
local lease = tonumber(ARGV[2])
local hold = ARGV[5]
-- A nested acquire: one more hold of the section's owner (counted once, even when re-sent); a
-- nested acquire never shortens the lease the outer one already has.
if ARGV[3] == '1' then
  if redis.call('hexists', KEYS[1], 'mode') == 1 then return {-2, 0} end
  if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return {0, -3} end
  if redis.call('hsetnx', KEYS[1], hold, 1) == 1 then redis.call('hincrby', KEYS[1], ARGV[1], 1) end
  if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], lease) end
  return {1, currentFence(KEYS[2], lease, ARGV[4] == 'counter')}
end
if redis.call('exists', KEYS[1]) == 0 then
  if ARGV[6] == 'waiting' then
    redis.call('hset', KEYS[1], ARGV[1], 1, hold, 1, '${WAITING_MARK}', 1)
  else
    redis.call('hset', KEYS[1], ARGV[1], 1, hold, 1)
  end
  redis.call('pexpire', KEYS[1], lease)
  return {1, freshFence(KEYS[2], lease, ARGV[4] == 'counter')}
end
-- a read/write lock holds the name (one name is one kind of lock): refused
if redis.call('hexists', KEYS[1], 'mode') == 1 then return {-2, 0} end
-- a fresh owner found holding: this very attempt ran before (its reply was lost)
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], lease) end
  return {1, currentFence(KEYS[2], lease, ARGV[4] == 'counter')}
end
-- held by another owner: a caller that will wait marks the hash, so its release wakes someone
if ARGV[6] == 'wait' or ARGV[6] == 'waiting' then redis.call('hset', KEYS[1], '${WAITING_MARK}', 1) end
return {0, redis.call('pttl', KEYS[1])}
`,
  [LUA_FENCE],
);
