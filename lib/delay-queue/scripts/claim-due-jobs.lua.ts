import { JobScript } from './job-script.js';
import { LUA_COMPLETE_JOB } from './complete-job-lua-snippet.js';
import { LUA_NEXT_WAKE, LUA_RATE_LOG, LUA_RECOVER_EXPIRED, LUA_TAKE_JOBS } from './claim-steps-lua-snippets.js';
import { LUA_TOPIC_BLOCK } from './topic-block-lua-snippet.js';

/**
 * The consumer's one round trip, in named steps (the steps' Lua: complete-job-lua-snippet.ts and
 * claim-steps-lua-snippets.ts):
 *
 * 1. acknowledge the finished jobs the call carries;
 * 2. recoverExpired: jobs whose visibility passed go back to DUE (or dead on their last attempt);
 * 3. one read tells whether the shard uses pause, a rate-limited block, groups, held turns or
 *    priorities at all (a plain topic pays it alone); held group turns whose deadline passed are released;
 * 4. the previous claim's record, whose reply has arrived, is deleted;
 * 5. the rate log is trimmed and tells how many claims this consumer's window allows;
 * 6. replayClaim (a second run of this call answers what the first took) or takeDueJobs: up to
 *    maxClaims due jobs into ACTIVE with a visibility deadline, in due order, jobs of a group from
 *    the ready groups merged with DUE in score order (one per group per turn); in a topic with
 *    priorities, the jobs that came due are first made ready and taken by priority, then the turns;
 * 7. nextWakeOf: when the consumer should call next; another consumer is woken while due jobs remain.
 *
 * A claim is safe to run twice: KEY.record is the claim's record, one key per claim call (consumer id
 * + sequence), kept for the visibility timeout. It lists the ids and claim tokens the first run took;
 * a second run returns those of them it still holds (same bodies, same tokens, same deadlines) and
 * claims nothing new, so no job is left claimed by a reply nobody received, which would cost it an
 * attempt. Acknowledgements and recovery are state checks, no-ops when repeated. While KEY.paused
 * exists nothing is claimed (acknowledgements and recovery go on) and no consumer is woken for due
 * jobs. While KEY.blocked holds a later server ms (a handler's JobRateLimitedError,
 * topic-block-lua-snippet.ts) nothing is claimed either, and nextWakeMs is not before the block's end
 * (as for the rate limit's next free moment), so consumers sleep until it instead of calling again.
 * With a rate limit (rateMax > 0), the claims of the last rateWindowMs on the server clock never
 * exceed rateMax; jobs over it wait, and nextWakeMs says when the window lets the next one through.
 *
 * KEYS and ARGV by name (the contract below; every key is one of the topic shard's, RedisKeySpace.topic,
 * or an operation record named from its jobs key: one hash tag). `previousRecord` is deleted when
 * `deletePrevious`; the completed zset and results hash are used when `keepsCompleted` (kept completed
 * jobs are then trimmed on every claim, acknowledgements or not). Then one record per acknowledgement:
 * id, claim token, result JSON ('' for none).
 *
 * Returns (decoded into a ClaimReply) { nowUs (server time in µs), nextWakeMs (-1: nothing pending),
 * moreDue (0|1), acked, { id, body, dueScore, ... }, { id, attempts, maxAttempts, 1 (requeued) | 0
 * (buried), ... } for the expired jobs taken back, nextDueMs (-1: none), claimedUs (when the returned
 * jobs were claimed: now, or for a second run the first run's time: the start a rate limit counted) }.
 * dueScore is the job's score in the due set (due ms * SLOTS + FIFO slot): a hand-back (release-jobs)
 * puts the job back at that very place.
 */
export const claimDueJobsScript = new JobScript(
  'claimDueJobs',
  {
    keys: [
      'due',
      'jobs',
      'active',
      'dead',
      'marker',
      'record',
      'fence',
      'paused',
      'rateLog',
      'completed',
      'results',
      'previousRecord',
      'blocked',
    ],
    args: {
      maxClaims: 'int',
      visibilityMs: 'int',
      defaultMaxAttempts: 'int',
      deadMaxCount: 'int',
      deadMaxAgeMs: 'int',
      rateMax: 'int',
      rateWindowMs: 'int',
      keepsCompleted: 'flag',
      keepCount: 'int',
      keepAgeMs: 'int',
      deletePrevious: 'flag',
    },
    repeated: { name: 'acks', fields: ['id', 'token', 'result'] },
    decode: decodeClaimReply,
  },
  `
local keep = keepOf(ARG.keepsCompleted, KEY.completed, KEY.results, ARG.keepCount, ARG.keepAgeMs)
local acked, trimLeft = acknowledge(ACKS_FROM, ACKS_STRIDE, keep)
local recovered = recoverExpired(ARG.defaultMaxAttempts, ARG.deadMaxCount, ARG.deadMaxAgeMs)

local plain = redis.call('exists', KEY.paused, GROUPS_READY, GROUPS_HELD, KEY.blocked, PRIORITY) == 0
if plain then
  groupsMayBeReady = false -- until a group's turn is added (refreshGroup sets it again)
else
  releaseExpiredTurns()
end
if ARG.deletePrevious then redis.call('del', KEY.previousRecord) end
local paused = not plain and redis.call('exists', KEY.paused) == 1
local blockEnd = plain and -1 or blockEndOf(KEY.blocked)
local held = paused or blockEnd > 0

local rateMax, rateWindowMs = ARG.rateMax, ARG.rateWindowMs
if rateMax > 0 then trimRateLog(KEY.rateLog, rateWindowMs) end
local allowed = ARG.maxClaims
if rateMax > 0 and allowed > 0 and not held then allowed = rateAllowance(KEY.rateLog, rateMax, rateWindowMs, allowed) end

local claimed, claimedUs = replayClaim()
if claimed == nil then
  claimed, claimedUs = {}, nowUs
  if allowed > 0 and not held then
    local ids, tokens
    local prioritized = not plain and priorityReadyUpTo() ~= false
    claimed, ids, tokens = takeDueJobs(allowed, not plain, prioritized, KEY.fence, ARG.visibilityMs, ARG.deadMaxCount, ARG.deadMaxAgeMs)
    if rateMax > 0 and #ids > 0 then logClaims(KEY.rateLog, ids, tokens) end
  end
end

local rateFree = blockEnd
if rateMax > 0 and not held then rateFree = rateFreeMs(KEY.rateLog, rateMax, rateWindowMs) end
local nextWake, more, nextDue = nextWakeOf(paused, not plain, rateFree, trimLeft)
return { nowUs, nextWake, more, acked, claimed, recovered, nextDue, claimedUs }
`,
  [LUA_COMPLETE_JOB, LUA_RECOVER_EXPIRED, LUA_RATE_LOG, LUA_TOPIC_BLOCK, LUA_TAKE_JOBS, LUA_NEXT_WAKE],
);

/** A job the claim took: its stored body and its score in the due set (due ms * SLOTS + FIFO slot). */
export interface ClaimedJob {
  readonly id: string;
  readonly body: string;
  readonly dueScore: number;
}

/** A job whose visibility passed, taken back by the claim's recovery step. */
export interface RecoveredJob {
  readonly id: string;
  readonly attempts: number;
  readonly maxAttempts: number;
  /** Back in DUE; false: buried (that was its last attempt). */
  readonly requeued: boolean;
}

/** The claim's reply, by name. */
export interface ClaimReply {
  /** The server's TIME, µs. */
  readonly nowUs: number;
  /** Server ms of the next due time, visibility deadline or held turn's deadline; -1 when nothing is pending. */
  readonly nextWakeMs: number;
  readonly moreDue: boolean;
  readonly acked: number;
  readonly claimed: ClaimedJob[];
  readonly recovered: RecoveredJob[];
  /** Server ms when the first job still waiting is due; -1 when none is. */
  readonly nextDueMs: number;
  /** When the claimed jobs were taken (server µs): now, or for a replayed claim the first run's time. */
  readonly claimedUs: number;
}

function decodeClaimReply(reply: unknown): ClaimReply {
  const [nowUs, nextWake, more, acked, flat, recovered, nextDue, claimedUs] = reply as [
    number,
    number,
    number,
    number,
    (string | number)[],
    (string | number)[],
    number,
    number,
  ];
  const claimed: ClaimedJob[] = [];
  for (let i = 0; i < flat.length; i += 3) claimed.push({ id: String(flat[i]), body: String(flat[i + 1]), dueScore: Number(flat[i + 2]) });
  const taken: RecoveredJob[] = [];
  for (let i = 0; i < recovered.length; i += 4) {
    const [id, attempts, maxAttempts, requeued] = recovered.slice(i, i + 4);
    taken.push({ id: String(id), attempts: Number(attempts), maxAttempts: Number(maxAttempts), requeued: Number(requeued) === 1 });
  }
  return {
    nowUs: Number(nowUs),
    nextWakeMs: Number(nextWake),
    moreDue: Number(more) === 1,
    acked: Number(acked),
    claimed,
    recovered: taken,
    nextDueMs: Number(nextDue),
    claimedUs: Number(claimedUs),
  };
}
