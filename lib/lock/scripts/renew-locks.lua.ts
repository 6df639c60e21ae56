import { RedisScript } from '../../redis/redis-script';

/**
 * Renews reentrant (plain or fair) locks: the watchdog's batch, and `extend()` as a batch of one.
 *
 * KEYS[i] owner hash of lock i; ARGV[1] lease in ms, ARGV[i + 1] owner id of lock i.
 * Returns a list with, per lock, 1 if renewed or 0 if the owner no longer holds it.
 */
export const renewLocksScript = new RedisScript(
  'renewLocks',
  `
local lease = ARGV[1]
local result = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], lease)
    result[i] = 1
  else
    result[i] = 0
  end
end
return result
`,
);
