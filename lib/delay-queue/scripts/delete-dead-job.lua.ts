import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Deletes one dead letter, and only a dead one: a job retried meanwhile (back in the queue) is kept.
 *
 * KEYS  the five topic keys, and the call's operation record (see lua-snippets.ts)
 * ARGV[1] job id
 *
 * Returns 1 when the dead letter was deleted, 0 when the job was not dead; a second run of the same
 * call answers as the first.
 */
export const deleteDeadJobScript = new RedisScript(
  'deleteDeadJob',
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local deleted = redis.call('zrem', DEAD, ARGV[1])
if deleted == 1 then redis.call('hdel', JOBS, ARGV[1]) end
recordReply(deleted)
return deleted
`,
  [LUA_TOPIC_PRELUDE],
);
