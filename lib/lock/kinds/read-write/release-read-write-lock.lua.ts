import { RedisScript } from '../../../core/redis/redis-script.js';
import { WAKE_ALL } from '../../protocols/lua-snippets.js';
import { LUA_PURGE_EXPIRED } from './read-write-lua-snippets.js';

/**
 * Releases one hold (read or write; layout: read-write-lua-snippets.ts). A hold that is not there
 * (released before: a re-sent release; or its lease ended) changes nothing. Holds of others whose
 * lease ended are purged too.
 *
 * KEYS[1] hash, KEYS[2] leases, KEYS[3] wake channel
 * ARGV[1] hold member, ARGV[2] publish command
 *
 * Returns -1 if this hold was not held, the holder's remaining holds if any, 0 when its last hold
 * ended. Every waiter is woken when the lock becomes free or stops being write-held.
 */
export const releaseReadWriteLockScript = new RedisScript(
  'releaseReadWriteLock',
  `
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
  [LUA_PURGE_EXPIRED],
);
