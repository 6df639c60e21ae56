import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_NOW_MS, LUA_RENEW_EACH } from '../../protocols/lua-snippets.js';
import { LUA_HOLDER_OF } from './read-write-lua-snippets.js';

/**
 * Renews read/write holds (layout: read-write-lua-snippets.ts), the watchdog's batch or `extend()`
 * as a batch of one. Each hold has its own deadline, so renewing one (even to a shorter lease) never
 * changes another; running twice sets the same deadline again. A hold whose lease already ended is
 * not revived.
 *
 * KEYS[2i-1] hash and KEYS[2i] leases of hold i
 * ARGV[1] lease ms, ARGV[i + 1] hold member of hold i
 *
 * Returns per hold 1 if renewed, 0 if no longer held.
 */
export const renewReadWriteLocksScript = new RedisScript(
  'renewReadWriteLocks',
  `
return renewEach(#KEYS / 2, function(i, lease)
  local hash, leases, member = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 1]
  local deadline = redis.call('zscore', leases, member)
  if not (deadline and tonumber(deadline) > now and redis.call('hexists', hash, holderOf(member)) == 1) then return false end
  redis.call('zadd', leases, now + lease, member)
  if redis.call('pttl', hash) < lease then redis.call('pexpire', hash, lease) end
  if redis.call('pttl', leases) < lease then redis.call('pexpire', leases, lease) end
  return true
end)
`,
  [LUA_NOW_MS, LUA_HOLDER_OF, LUA_RENEW_EACH],
);
