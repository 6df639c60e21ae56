import { JobScript } from './job-script.js';
import { LUA_REPEAT, REPEAT_KEYS } from './repeat-lua-snippets.js';

/** What an advance did: moved the tick, changed nothing, or found no tick left within the bounds. */
export type AdvanceOutcome = 'advanced' | 'unchanged' | 'finished';

/**
 * Moves a schedule from the tick it queued last to the next one and enqueues that tick's job: a
 * compare-and-set on the stored tick and definition. Called by the consumer that claimed the tick
 * (before running it) and by the periodic check (a tick job cancelled, dead, or stale after downtime).
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the repeat keys (see
 * repeat-lua-snippets.ts); the schedule id, the definition fingerprint the caller read, the stored
 * tick the caller read (`expectedTick`), the tick to enqueue (`nextTick`, later than `expectedTick`;
 * '' when the caller found none within the bounds: only `claimed` is recorded), the tick jobs' body
 * tail, `dropStale`: also drop the job of `expectedTick` if it still waits (catch-up replaces a stale
 * tick), `claimed`: a consumer claimed the tick `expectedTick` (recorded as the schedule's last run),
 * then the definition's limit, startDate, endDate ('' for none).
 *
 * Returns 1 advanced, 0 nothing changed (another instance advanced first, the schedule was changed or
 * removed), 2 finished: the bounds leave no tick to queue (nothing queued; a claim is recorded),
 * decoded as 'advanced' | 'unchanged' | 'finished'. The runs count (repeatRuns) grows with the tick
 * queued, except when the tick replaces a stale one dropped before any delivery. Run twice, the
 * second run finds the stored tick moved and changes nothing (a finish records the same last run again).
 */
export const advanceRepeatScript = new JobScript(
  'advanceRepeat',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', ...REPEAT_KEYS],
    args: {
      scheduleId: 'text',
      fingerprint: 'text',
      expectedTick: 'int',
      nextTick: 'text',
      tail: 'text',
      dropStale: 'flag',
      claimed: 'flag',
      limit: 'text',
      startDate: 'text',
      endDate: 'text',
    },
    decode: (reply): AdvanceOutcome => (Number(reply) === 1 ? 'advanced' : Number(reply) === 2 ? 'finished' : 'unchanged'),
  },
  `
local id, fingerprint, expected, nextTick = ARG.scheduleId, ARG.fingerprint, ARG.expectedTick, tonumber(ARG.nextTick)
local tail, drop = ARG.tail, ARG.dropStale
local stored = redis.call('hget', REPEATS, id)
if not stored or string.sub(stored, 1, 40) ~= fingerprint then return 0 end
local tick = tonumber(redis.call('zscore', REPEAT_NEXT, id))
if tick ~= expected or (nextTick and nextTick <= tick) then return 0 end
if ARG.claimed then redis.call('zadd', REPEAT_LAST, fmt(tick), id) end
local staleJob = tickJobId(id, tick)
local queued = queuedOf(id)
-- A stale tick dropped before any delivery gives its run to the tick replacing it.
if drop and waitsUndelivered(staleJob) then queued = queued - 1 end
if not nextTick or not withinBounds(nextTick, queued, ARG.limit, ARG.startDate, ARG.endDate) then return 2 end
if drop then dropWaitingTick(staleJob) end
redis.call('zadd', REPEAT_NEXT, fmt(nextTick), id)
redis.call('hset', REPEAT_RUNS, id, queued + 1)
enqueueTick(tickJobId(id, nextTick), nextTick, tail)
return 1
`,
  [LUA_REPEAT],
);
