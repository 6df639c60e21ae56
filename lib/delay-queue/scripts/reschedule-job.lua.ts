import { JobScript } from './job-script.js';
import { LUA_DEDUPE_KEY } from './dedupe-lua-snippet.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Moves a waiting job to a new due time (behind the jobs already due in that millisecond).
 * A job already claimed, dead, or unknown is left alone. A debounced job's key, while it names the
 * job, then lives until DEBOUNCE_KEY_GRACE_MS past the new due time (dedupe-lua-snippet.ts).
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the call's operation record
 * (see lua-snippets.ts); the job's id, kind ('d' delay from TIME | 'a' absolute ms), when.
 *
 * Returns 1 if rescheduled, 0 if the job was not waiting (decoded as `rescheduled`). A second run of
 * the same call answers as the first and moves nothing (the job may have been claimed in between).
 */
export const rescheduleJobScript = new JobScript(
  'rescheduleJob',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record'],
    args: { id: 'text', kind: 'text', when: 'int' },
    decode: (reply) => ({ rescheduled: Number(reply) === 1 }),
  },
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local id = ARG.id
local dueMs = ARG.when
if ARG.kind == 'd' then dueMs = nowMs + ARG.when end
local body = redis.call('hget', JOBS, id)
local group = body and groupQueueScore(id, body) and groupOf(body)
if group then
  -- Waiting in its group's queue: it moves there (and the group's turn with it).
  removeFromGroup(id, body)
  local headBefore = headScore()
  local turn = addToGroup(group, id, groupScoreFor(group, dueMs))
  if turn and (headBefore == nil or turn < headBefore) then wake(math.floor(turn / SLOTS)) end
  dedupeFollowsDueTime(id, body, dueMs)
  recordReply(1)
  return 1
end
if not redis.call('zscore', DUE, id) then
  recordReply(0)
  return 0
end
unqueueDue(id)
local headBefore = headScore()
local score = scoreFor(dueMs)
queueDue(id, score, body)
if headBefore == nil or score < headBefore then wake(math.floor(score / SLOTS)) end
dedupeFollowsDueTime(id, body, dueMs)
recordReply(1)
return 1
`,
  [LUA_TOPIC_PRELUDE, LUA_DEDUPE_KEY],
);
