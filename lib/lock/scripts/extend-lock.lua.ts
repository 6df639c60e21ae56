import { RedisScript } from '../../redis/redis-script';

/**
 * Sets a new lease on a lock, only for its owner.
 *
 * KEYS[1] owner hash; ARGV[1] owner id, ARGV[2] lease in ms. Returns 1 if extended, 0 if not held.
 */
export const extendLockScript = new RedisScript(
  'extendLock',
  `
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('pexpire', KEYS[1], ARGV[2])
return 1
`,
);
