import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_FENCE } from '../../protocols/lua-snippets.js';
import { LUA_READ_WRITE_ACQUIRE } from './read-write-lua-snippets.js';

/**
 * Takes or re-enters a read hold (layout: read-write-lua-snippets.ts). Writer preference: while a
 * live writer waits, a new reader is refused even when the lock is free or only read-held; only an
 * owner already holding (nested read, or a writer taking the read side) gets in.
 *
 * KEYS[1] hash, KEYS[2] leases, KEYS[3] waiting writers, KEYS[4] fence
 * ARGV[1] owner, ARGV[2] lease ms, ARGV[3] hold id, ARGV[4] '1' when the owner comes from an
 * enclosing section (a nested acquire)
 *
 * Returns {1, fencingToken}, {0, ms to sleep at most}, {-2, 0} when an exclusive lock holds the name,
 * or {0, -3} when a nested acquire finds its section's owner holding neither side any more.
 */
export const acquireReadLockScript = new RedisScript(
  'acquireReadLock',
  `
local readField, member, mode, lease, answer = openAcquire('r', ARGV[3], ARGV[4] == '1')
if answer then return answer end
local nested = redis.call('hexists', KEYS[1], readField) == 1
local downgrade = mode == 'write' and redis.call('hexists', KEYS[1], ARGV[1] .. ':w') == 1
if nested or downgrade or (mode == 'read' and redis.call('zcard', KEYS[3]) == 0) then
  hold(readField, member, lease)
  return {1, currentFence(KEYS[4], lease)}
end
return {0, waitTime()}
`,
  [LUA_FENCE, LUA_READ_WRITE_ACQUIRE],
);
