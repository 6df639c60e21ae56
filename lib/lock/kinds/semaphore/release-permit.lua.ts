import { RedisScript } from '../../../core/redis/redis-script.js';

/**
 * Hands a semaphore permit back (layout: acquire-permit.lua.ts).
 *
 * KEYS[1] permits zset, KEYS[2] wake channel, KEYS[3] grants
 * ARGV[1] owner, ARGV[2] publish command
 *
 * Returns 0 when released (one waiter is woken), -1 when the permit was not held (released before,
 * e.g. a re-sent release, or its lease ended): then nothing changes.
 */
export const releasePermitScript = new RedisScript(
  'releasePermit',
  `
redis.call('hdel', KEYS[3], ARGV[1])
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then return -1 end
redis.call(ARGV[2], KEYS[2], '1')
return 0
`,
);
