import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_REPEAT } from './repeat-lua-snippets.js';

/**
 * Moves a schedule from the tick it queued last to the next one and enqueues that tick's job: a
 * compare-and-set on the stored tick and definition. Called by the consumer that claimed the tick
 * (before running it) and by the periodic check (a tick job cancelled, dead, or stale after downtime).
 *
 * KEYS  see repeat-lua-snippets.ts (KEYS[6] unused)
 * ARGV[1] schedule id, ARGV[2] definition fingerprint the caller read, ARGV[3] the stored tick the
 *         caller read, ARGV[4] the tick to enqueue (later than ARGV[3]; '' when the caller found
 *         none within the bounds: only ARGV[7] is recorded), ARGV[5] the tick jobs' body
 *         tail, ARGV[6] '1': also drop the job of ARGV[3] if it still waits (catch-up replaces a stale tick),
 *         ARGV[7] '1': a consumer claimed the tick ARGV[3] (recorded as the schedule's last run),
 *         ARGV[8..10] (optional) the definition's limit, startDate, endDate ('' for none)
 *
 * Returns 1 advanced, 0 nothing changed (another instance advanced first, the schedule was changed or
 * removed), 2 finished: the bounds leave no tick to queue (nothing queued; a claim is recorded).
 * The runs count (KEYS[12]) grows with the tick queued, except when the tick replaces a stale one
 * dropped before any delivery. Run twice, the second run finds the stored tick moved and changes
 * nothing (a finish records the same last run again).
 */
export const advanceRepeatScript = new RedisScript(
  'advanceRepeat',
  `
local id, fingerprint, expected, nextTick, tail, drop = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], ARGV[6]
local stored = redis.call('hget', REPEATS, id)
if not stored or string.sub(stored, 1, 40) ~= fingerprint then return 0 end
local tick = tonumber(redis.call('zscore', REPEAT_NEXT, id))
if tick ~= expected or (nextTick and nextTick <= tick) then return 0 end
if ARGV[7] == '1' then redis.call('zadd', REPEAT_LAST, fmt(tick), id) end
local staleJob = tickJobId(id, tick)
local queued = queuedOf(id)
-- A stale tick dropped before any delivery gives its run to the tick replacing it.
if drop == '1' and waitsUndelivered(staleJob) then queued = queued - 1 end
if not nextTick or not withinBounds(nextTick, queued, ARGV[8] or '', ARGV[9] or '', ARGV[10] or '') then return 2 end
if drop == '1' then dropWaitingTick(staleJob) end
redis.call('zadd', REPEAT_NEXT, fmt(nextTick), id)
redis.call('hset', REPEAT_RUNS, id, queued + 1)
enqueueTick(tickJobId(id, nextTick), nextTick, tail)
return 1
`,
  [LUA_REPEAT],
);
