import { RedisScript } from '../../redis/redis-script';

/**
 * Releases one level of a reentrant lock, only for its owner.
 *
 * KEYS[1] owner hash, KEYS[2] wake channel (a key argument so a cluster routes by its hash tag)
 * ARGV[1] owner id, ARGV[2] 'publish' or 'spublish'
 *
 * Returns -1 when the caller does not hold the lock (released before, expired, taken over),
 * the remaining reentry count when still held, 0 when freed; on 0 one waiter is told to try.
 */
export const releaseLockScript = new RedisScript(
  'releaseLock',
  `
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end
local left = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if left > 0 then return left end
redis.call('del', KEYS[1])
redis.call(ARGV[2], KEYS[2], '1')
return 0
`,
);
