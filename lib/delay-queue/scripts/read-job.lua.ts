import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Reads one job and where it is, in one consistent snapshot.
 *
 * KEYS  the five topic keys (see lua-snippets.ts)
 * ARGV[1] id
 *
 * Returns { nowMs, body|nil, due score|nil, visibility deadline|nil, time of death|nil }; the due
 * score is also that of a job waiting in its group's queue (see group-lua-snippet.ts).
 */
export const readJobScript = new RedisScript(
  'readJob',
  `
local id = ARGV[1]
local body = redis.call('hget', JOBS, id)
local due = redis.call('zscore', DUE, id)
if body and not due then due = groupQueueScore(id, body) or false end
return { nowMs, body, due, redis.call('zscore', ACTIVE, id), redis.call('zscore', DEAD, id) }
`,
  [LUA_TOPIC_PRELUDE],
);
