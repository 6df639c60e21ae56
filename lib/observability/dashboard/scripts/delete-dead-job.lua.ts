import { RedisScript } from '../../../redis/redis-script.js';

/**
 * Deletes one dead letter, and only a dead one: a job retried meanwhile (back in the queue) is kept.
 *
 * KEYS[1] dead  `<prefix>:dq:{topic}:dead`  zset id -> time of death
 * KEYS[2] jobs  `<prefix>:dq:{topic}:jobs`  hash id -> body
 * ARGV[1] job id
 *
 * Returns 1 when the dead letter was deleted, 0 when the job was not dead.
 */
export const deleteDeadJobScript = new RedisScript(
  'dashboardDeleteDeadJob',
  `
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('hdel', KEYS[2], ARGV[1])
return 1
`,
);
