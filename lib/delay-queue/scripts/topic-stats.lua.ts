import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Counts a topic's jobs by state, and its repeatable schedules, in one snapshot.
 *
 * KEYS  the five topic keys (see lua-snippets.ts); then, optionally, KEYS[6] (unused), KEYS[7]
 *       the schedules hash of repeat-lua-snippets.ts, KEYS[8] the completed zset
 *       (complete-job-lua-snippet.ts) and KEYS[9] the pause flag. Without them those counts are 0
 *       and the shard reads as not paused (callers that only need the other job counts pass five keys).
 * ARGV  none
 *
 * Returns { waiting, due now, active, dead, schedules, completed, paused (0|1), waiting in their
 * group's queue, groups with a job out (running or waiting for a retry) } (waiting includes the due
 * ones, not the jobs in a group's queue: each job body is in exactly one of DUE, ACTIVE, DEAD, its
 * group's queue or the completed set, so the group-queued are the rest of JOBS; completed counts the
 * kept completed jobs, including, until trimmed, the old record of an id scheduled again).
 */
export const topicStatsScript = new RedisScript(
  'topicStats',
  `
local schedules, completed, paused = 0, 0, 0
if KEYS[7] then schedules = redis.call('hlen', KEYS[7]) end
if KEYS[8] then completed = redis.call('zcard', KEYS[8]) end
if KEYS[9] then paused = redis.call('exists', KEYS[9]) end
local waiting, active, dead = redis.call('zcard', DUE), redis.call('zcard', ACTIVE), redis.call('zcard', DEAD)
local inGroupQueues = redis.call('hlen', JOBS) - waiting - active - dead - completed
return { waiting, redis.call('zcount', DUE, '-inf', '(' .. fmt((nowMs + 1) * SLOTS)), active, dead, schedules, completed, paused,
         math.max(0, inGroupQueues), redis.call('hlen', GROUPS_OUT) }
`,
  [LUA_TOPIC_PRELUDE],
);
