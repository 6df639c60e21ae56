import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Pauses or resumes a topic shard: while its pause flag is present, claims take nothing (running
 * jobs finish and are acknowledged; crashed consumers' jobs still return to the queue). Resuming
 * wakes a consumer, which wakes the next while due jobs remain.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the call's operation record (see
 * lua-snippets.ts) and the shard's pause flag (TopicKeys.paused); whether to pause (else resume).
 *
 * Returns 1 when the call changed the state, 0 when the shard already was so (decoded as `changed`).
 * A second run of the same call answers as the first.
 */
export const pauseTopicScript = new JobScript(
  'pauseTopic',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record', 'paused'],
    args: { pause: 'flag' },
    decode: (reply) => ({ changed: Number(reply) === 1 }),
  },
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local changed
if ARG.pause then
  changed = redis.call('set', KEY.paused, nowMs, 'nx') and 1 or 0
else
  changed = redis.call('del', KEY.paused)
  local head = headScore()
  if head then wake(math.floor(head / SLOTS)) end
end
recordReply(changed)
return changed
`,
  [LUA_TOPIC_PRELUDE],
);
