import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_NOW_MS, LUA_RENEW_EACH } from '../../protocols/lua-snippets.js';

/**
 * Renews semaphore permits (layout: acquire-permit.lua.ts), the watchdog's batch or `extend()` as a
 * batch of one; running twice sets the same deadline again. A permit whose lease already ended is
 * not revived: someone else may have been counted in its place (the next acquire purges it).
 *
 * KEYS[i] permits zset of permit i
 * ARGV[1] lease ms, ARGV[i + 1] owner of permit i
 *
 * Returns per permit 1 if renewed, 0 if no longer held.
 */
export const renewPermitsScript = new RedisScript(
  'renewPermits',
  `
return renewEach(#KEYS, function(i, lease)
  local deadline = redis.call('zscore', KEYS[i], ARGV[i + 1])
  if not (deadline and tonumber(deadline) > now) then return false end
  redis.call('zadd', KEYS[i], now + lease, ARGV[i + 1])
  if redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
  return true
end)
`,
  [LUA_NOW_MS, LUA_RENEW_EACH],
);
