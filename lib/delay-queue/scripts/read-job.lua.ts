import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Reads one job and where it is, in one consistent snapshot.
 *
 * KEYS  the five topic keys (see lua-snippets.ts)
 * ARGV[1] id
 *
 * Returns { nowMs, body|nil, due score|nil, visibility deadline|nil, time of death|nil }.
 */
export const readJobScript = new RedisScript(
  'readJob',
  `
local id = ARGV[1]
return { nowMs, redis.call('hget', JOBS, id), redis.call('zscore', DUE, id),
         redis.call('zscore', ACTIVE, id), redis.call('zscore', DEAD, id) }
`,
  [LUA_TOPIC_PRELUDE],
);
