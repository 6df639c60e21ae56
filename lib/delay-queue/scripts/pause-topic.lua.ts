import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Pauses or resumes a topic shard: while its pause flag is present, claims take nothing (running
 * jobs finish and are acknowledged; crashed consumers' jobs still return to the queue). Resuming
 * wakes a consumer, which wakes the next while due jobs remain.
 *
 * KEYS  the five topic keys and the call's operation record (see lua-snippets.ts); the pause flag is
 *       the shard's `<shard>:paused` (TopicKeys.paused), named from JOBS like the group keys
 * ARGV[1] '1' pause | '0' resume
 *
 * Returns 1 when the call changed the state, 0 when the shard already was so. A second run of the
 * same call answers as the first.
 */
export const pauseTopicScript = new RedisScript(
  'pauseTopic',
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local PAUSED = SHARD .. ':paused'
local changed
if ARGV[1] == '1' then
  changed = redis.call('set', PAUSED, nowMs, 'nx') and 1 or 0
else
  changed = redis.call('del', PAUSED)
  local head = headScore()
  if head then wake(math.floor(head / SLOTS)) end
end
recordReply(changed)
return changed
`,
  [LUA_TOPIC_PRELUDE],
);
