import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Counts a topic's jobs by state, and its repeatable schedules, in one snapshot.
 *
 * KEYS  the five topic keys (see lua-snippets.ts); then, optionally, KEYS[6] (unused), KEYS[7]
 *       the schedules hash of repeat-lua-snippets.ts and KEYS[8] the pause flag. Without them the
 *       schedules count is 0 and the shard reads as not paused (callers that only need the job
 *       counts pass five keys).
 * ARGV  none
 *
 * Returns { waiting, due now, active, dead, schedules, paused (0|1), waiting in their group's
 * queue, groups with a job out (running or waiting for a retry) } (waiting includes the due ones,
 * not the jobs in a group's queue: each job body is in exactly one of DUE, ACTIVE, DEAD or its
 * group's queue, so those are the rest of JOBS).
 */
export const topicStatsScript = new RedisScript(
  'topicStats',
  `
local schedules, paused = 0, 0
if KEYS[7] then schedules = redis.call('hlen', KEYS[7]) end
if KEYS[8] then paused = redis.call('exists', KEYS[8]) end
local waiting, active, dead = redis.call('zcard', DUE), redis.call('zcard', ACTIVE), redis.call('zcard', DEAD)
local inGroupQueues = redis.call('hlen', JOBS) - waiting - active - dead
return { waiting, redis.call('zcount', DUE, '-inf', '(' .. fmt((nowMs + 1) * SLOTS)), active, dead, schedules, paused,
         math.max(0, inGroupQueues), redis.call('hlen', GROUPS_OUT) }
`,
  [LUA_TOPIC_PRELUDE],
);
