import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_RENEW_EACH } from '../../protocols/lua-snippets.js';

/**
 * Renews reentrant (plain or fair) locks: the watchdog's batch, and `extend()` as a batch of one.
 *
 * KEYS[i] owner hash of lock i; ARGV[1] lease in ms, ARGV[i + 1] owner id of lock i.
 * Returns a list with, per lock, 1 if renewed or 0 if the owner no longer holds it.
 *
 * With one hold the lease is set to ARGV[1] (an `extend()` may shorten its own hold). With more
 * holds of the owner open (nested re-entries), another of them may count on a longer lease than
 * this one: then the lease is only ever lengthened. Running twice sets the same lease again.
 */
export const renewLocksScript = new RedisScript(
  'renewLocks',
  `
return renewEach(#KEYS, function(i, lease)
  local count = tonumber(redis.call('hget', KEYS[i], ARGV[i + 1]))
  if not count then return false end
  if count <= 1 or redis.call('pttl', KEYS[i]) < lease then redis.call('pexpire', KEYS[i], lease) end
  return true
end)
`,
  [LUA_RENEW_EACH],
);
