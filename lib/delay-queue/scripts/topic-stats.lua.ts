import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Counts a topic's jobs by state, and its repeatable schedules, in one snapshot.
 *
 * KEYS  the five topic keys (see lua-snippets.ts); then, optionally, KEYS[6] (unused) and KEYS[7]
 *       the schedules hash of repeat-lua-snippets.ts, KEYS[8] the completed zset
 *       (complete-job-lua-snippet.ts). Without them those counts are 0 (callers that only need the
 *       other job counts pass five keys).
 * ARGV  none
 *
 * Returns { waiting, due now, active, dead, schedules, completed } (waiting includes the due ones;
 * completed counts the kept completed jobs, including, until trimmed, the old record of an id
 * scheduled again).
 */
export const topicStatsScript = new RedisScript(
  'topicStats',
  `
local schedules, completed = 0, 0
if KEYS[7] then schedules = redis.call('hlen', KEYS[7]) end
if KEYS[8] then completed = redis.call('zcard', KEYS[8]) end
return { redis.call('zcard', DUE), redis.call('zcount', DUE, '-inf', '(' .. fmt((nowMs + 1) * SLOTS)),
         redis.call('zcard', ACTIVE), redis.call('zcard', DEAD), schedules, completed }
`,
  [LUA_TOPIC_PRELUDE],
);
