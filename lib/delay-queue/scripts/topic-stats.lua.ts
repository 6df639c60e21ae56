import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Counts a topic's jobs by state in one snapshot.
 *
 * KEYS  the five topic keys (see lua-snippets.ts)
 * ARGV  none
 *
 * Returns { waiting, due now, active, dead } (waiting includes the due ones).
 */
export const topicStatsScript = new RedisScript(
  'topicStats',
  `
return { redis.call('zcard', DUE), redis.call('zcount', DUE, '-inf', '(' .. fmt((nowMs + 1) * SLOTS)),
         redis.call('zcard', ACTIVE), redis.call('zcard', DEAD) }
`,
  [LUA_TOPIC_PRELUDE],
);
