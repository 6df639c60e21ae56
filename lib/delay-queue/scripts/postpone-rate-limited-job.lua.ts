import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';
import { LUA_TOPIC_BLOCK } from './topic-block-lua-snippet.js';

/**
 * A handler threw `JobRateLimitedError(retryAfterMs)`: the job goes back to the queue at the very
 * score it was claimed from (its place ahead of jobs due later), its attempt undone, and the shard's
 * claims are blocked until now + retryAfterMs on the server clock (topic-block-lua-snippet.ts; a
 * longer block already in place stays). A job of a group keeps its group's turn, as a hand-back or a
 * retry does (no later job of the group starts before it, also when it was a retry due later than
 * them). Its claim token stays in the body, so its next claim's fence is above it. One
 * consumer is woken, so that one claim learns the block's end and watches it.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the shard's block key; the
 * job's id, claim token, due score (as claimed), the block's length in ms and the attempts the
 * delivery counted (its own included).
 *
 * Returns { 1 postponed | 0 not claimed under that token any more, the block's end in server ms (-1:
 * none) }, decoded as { postponed, blockedUntilMs }. Safe to run twice: the job is moved only while
 * it is still claimed under the token, and the block is set only with that move, so a second run
 * changes nothing (it answers postponed while the job waits with that token, and the block's end).
 * A delivery cancelled or replaced while it ran releases the group turn it held, once.
 */
export const postponeRateLimitedJobScript = new JobScript(
  'postponeRateLimitedJob',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'blocked'],
    args: { id: 'text', token: 'text', dueScore: 'text', retryAfterMs: 'int', attempts: 'int' },
    decode: (reply) => {
      const [postponed, blockedUntil] = reply as [number, number];
      return { postponed: Number(postponed) === 1, blockedUntilMs: Number(blockedUntil) };
    },
  },
  `
local id = ARG.id
local body = ownedBody(id, ARG.token)
if not body then
  releaseHeldTurn(ARG.token) -- cancelled or replaced while it ran: its handler has returned
  local stored = redis.call('hget', JOBS, id)
  -- This very postpone ran before (its reply lost): the job waits under the token, its attempt undone.
  -- A job recovered after its visibility ran out also waits under the token, with the attempt spent.
  local waiting = stored and tokenOf(stored) == ARG.token and not redis.call('zscore', ACTIVE, id)
    and attemptsOf(stored) == math.max(0, ARG.attempts - 1)
    and redis.call('zscore', DUE, id)
  return { waiting and 1 or 0, blockEndOf(KEY.blocked) }
end
redis.call('zrem', ACTIVE, id)
body = withAttempts(body, math.max(0, (attemptsOf(body) or 1) - 1))
redis.call('hset', JOBS, id, body)
-- A job of a group keeps its group's turn (as a hand-back or a retry does): it waits in DUE, counted
-- out, so no later job of its group starts before it. With priorities: ready again at once, keeping its priority.
queueDue(id, tonumber(ARG.dueScore), body)
local untilMs = blockUntil(KEY.blocked, nowMs + ARG.retryAfterMs)
-- A consumer asleep with nothing due would not look again: woken now, its claim finds the block and
-- sleeps until the block's end.
wake(untilMs)
return { 1, untilMs }
`,
  [LUA_TOPIC_PRELUDE, LUA_TOPIC_BLOCK],
);
