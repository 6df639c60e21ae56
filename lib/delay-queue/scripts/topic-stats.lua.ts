import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Counts a topic's jobs by state, and its repeatable schedules, in one snapshot.
 *
 * KEYS  the five topic keys (see lua-snippets.ts); then, optionally, KEYS[6] (unused) and KEYS[7]
 *       the schedules hash of repeat-lua-snippets.ts. Without them the schedules count is 0 (callers
 *       that only need the job counts pass five keys).
 * ARGV  none
 *
 * Returns { waiting, due now, active, dead, schedules } (waiting includes the due ones).
 */
export const topicStatsScript = new RedisScript(
  'topicStats',
  `
local schedules = 0
if KEYS[7] then schedules = redis.call('hlen', KEYS[7]) end
return { redis.call('zcard', DUE), redis.call('zcount', DUE, '-inf', '(' .. fmt((nowMs + 1) * SLOTS)),
         redis.call('zcard', ACTIVE), redis.call('zcard', DEAD), schedules }
`,
  [LUA_TOPIC_PRELUDE],
);
