import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_FENCE } from '../../protocols/lua-snippets.js';
import { LUA_READ_WRITE_ACQUIRE } from './read-write-lua-snippets.js';

/**
 * Takes or re-enters the write hold (layout: read-write-lua-snippets.ts).
 *
 * KEYS[1] hash, KEYS[2] leases, KEYS[3] waiting writers, KEYS[4] fence
 * ARGV[1] owner, ARGV[2] lease ms, ARGV[3] writer liveness ms, ARGV[4] '1' to register as waiting,
 * ARGV[5] hold id, ARGV[6] '1' when the owner comes from an enclosing section (a nested acquire)
 *
 * Returns {1, fencingToken}, {0, ms to sleep at most}, {-1, 0} when the caller holds only a read
 * hold (an upgrade, refused: two readers upgrading at once would deadlock), {-2, 0} when an
 * exclusive lock holds the name, or {0, -3} when a nested acquire finds its section's owner holding
 * neither side any more.
 */
export const acquireWriteLockScript = new RedisScript(
  'acquireWriteLock',
  `
local writeField, member, _, lease, answer = openAcquire('w', ARGV[5], ARGV[6] == '1')
if answer then return answer end
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
  [LUA_FENCE, LUA_READ_WRITE_ACQUIRE],
);
