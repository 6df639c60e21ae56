import { RedisScript } from '../../redis/redis-script.js';
import { LUA_PRELUDE } from './lua-prelude.js';

/**
 * Deletes one dead letter, and only a dead one: a job retried meanwhile (back in the queue) is kept.
 *
 * KEYS  the five topic keys (see lua-prelude.ts)
 * ARGV[1] job id
 *
 * Returns 1 when the dead letter was deleted, 0 when the job was not dead.
 */
export const deleteDeadJobScript = new RedisScript(
  'deleteDeadJob',
  `${LUA_PRELUDE}
if redis.call('zrem', DEAD, ARGV[1]) == 0 then return 0 end
redis.call('hdel', JOBS, ARGV[1])
return 1
`,
);
