import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_REPEAT } from './repeat-lua-snippets.js';

/**
 * Creates or updates a repeatable schedule (`repeat()`): an upsert by schedule id.
 *
 * KEYS  see repeat-lua-snippets.ts (KEYS[6] unused)
 * ARGV[1] schedule id, ARGV[2] stored form (fingerprint + JSON), ARGV[3] first tick (epoch ms, after
 *         the server time the caller read), ARGV[4] the tick jobs' body tail
 *
 * Returns { status, tick, nowMs }: status 0 the same definition was stored already (nothing changes;
 * tick is the one queued), 1 created, 2 replaced another definition (its waiting tick job is dropped;
 * one already running finishes), -1 the first tick is no longer in the future (read the time again).
 * A changed definition starts at a tick after the server's now, so no tick that may have run is
 * enqueued again. Run twice, the second run finds the same definition and changes nothing.
 */
export const upsertRepeatScript = new RedisScript(
  'upsertRepeat',
  `
local id, stored, firstTick, tail = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local old = redis.call('hget', REPEATS, id)
local oldTick = redis.call('zscore', REPEAT_NEXT, id)
if old and oldTick and string.sub(old, 1, 40) == string.sub(stored, 1, 40) then
  return { 0, tonumber(oldTick), nowMs }
end
if firstTick <= nowMs then return { -1, 0, nowMs } end
if oldTick then dropWaitingTick(tickJobId(id, tonumber(oldTick))) end
redis.call('hset', REPEATS, id, stored)
redis.call('zadd', REPEAT_NEXT, fmt(firstTick), id)
enqueueTick(tickJobId(id, firstTick), firstTick, tail)
return { old and 2 or 1, firstTick, nowMs }
`,
  [LUA_REPEAT],
);
