import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Reads one job and where it is, in one consistent snapshot.
 *
 * KEYS  the five topic keys (see lua-snippets.ts), KEYS[6] the completed zset, KEYS[7] the results
 *       hash (see complete-job-lua-snippet.ts)
 * ARGV[1] id
 *
 * Returns { nowMs, body|nil, due score|nil, visibility deadline|nil, time of death|nil,
 *           finishedAt|nil, result JSON|nil }; the due score is also that of a job waiting in its
 * group's queue (see group-lua-snippet.ts). finishedAt and the result are read only for a job in
 * none of DUE, ACTIVE, DEAD and its group's queue (a kept completed job; an id scheduled again is
 * that new job).
 */
export const readJobScript = new RedisScript(
  'readJob',
  `
local id = ARGV[1]
local body, due, active, dead = redis.call('hget', JOBS, id), redis.call('zscore', DUE, id),
  redis.call('zscore', ACTIVE, id), redis.call('zscore', DEAD, id)
if body and not due then due = groupQueueScore(id, body) or false end
local finished, result = false, false
if body and not (due or active or dead) then
  finished = redis.call('zscore', KEYS[6], id)
  if finished then result = redis.call('hget', KEYS[7], id) end
end
return { nowMs, body, due, active, dead, finished, result }
`,
  [LUA_TOPIC_PRELUDE],
);
