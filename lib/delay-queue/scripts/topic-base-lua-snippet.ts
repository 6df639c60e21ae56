import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { DUE_SCORE_SLOTS, OPERATION_RECORD_TTL_MS, PRIORITY_MOVE_BATCH, PRIORITY_SEQ_SPAN } from '../jobs/delay-queue.constants.js';
import { LUA_JOB_HEADER } from './job-header-lua-snippet.js';

/**
 * Lua: the opening every delayed-job script uses (a constant of this library; no user input). All of
 * them take the same five keys of one topic, which share a hash tag and so one cluster slot (every
 * script names its KEYS in its contract, job-script.ts, these five first):
 *
 * KEYS[1] due     zset  id -> dueMs * SLOTS + FIFO slot
 * KEYS[2] jobs    hash  id -> body (see jobs/job-fields.ts; read and written by job-header-lua-snippet.ts)
 * KEYS[3] active  zset  id -> visibility deadline ms
 * KEYS[4] dead    zset  id -> time of death ms
 * KEYS[5] marker  zset  'wake' -> ms; BZPOPMIN target of blocked consumers
 * KEYS[6] (optional, some scripts) the call's operation record (see operation-record.ts): what a
 *         first run did, so that a second run of the same call (a re-sent command) answers the same
 *         and changes nothing
 *
 * A topic that has had a job with a priority also has two keys named from the shard's prefix, as a
 * group's keys are (same hash tag, same slot):
 *
 * PRIORITY     hash  'ready' -> a DUE score: every job of DUE scored up to it is also in PRIORITIZED;
 *                    'seq' -> jobs made ready so far (their order within one priority)
 * PRIORITIZED  zset  id -> priority * SPAN + seq % SPAN: the DUE jobs made ready, all of them due
 *
 * Every waiting job stays in DUE by due time (its state, counts, lists, cancel and reschedule read
 * DUE alone); PRIORITIZED only orders the due ones for the claim, which takes from it. A job enters
 * PRIORITIZED only once due (its score in DUE at most 'ready', which never passes the clock of the
 * script that set it), so no priority makes a job start early. queueDue and unqueueDue keep the
 * invariant PRIORITIZED ⊆ DUE for every writer of DUE; the claim moves what came due since
 * (makeDueReady). A topic without that hash never reads more than the one check that finds it absent.
 *
 * Times come from the server's TIME, never from a client clock. Numbers are turned into strings with
 * fmt(): Lua's own tostring keeps 14 digits only, and scores have 16.
 */
export const LUA_TOPIC_BASE: LuaSnippet = {
  name: 'topicBase',
  requires: [LUA_JOB_HEADER],
  source: `
local SLOTS = ${DUE_SCORE_SLOTS}
local DUE, JOBS, ACTIVE, DEAD, MARKER, OPERATION = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local OPERATION_TTL_MS = ${OPERATION_RECORD_TTL_MS}
-- The shard's own prefix (its JOBS key without ':jobs'): the keys of job groups are named from it
-- (see group-lua-snippet.ts); GROUPS_READY holds the groups that may start a job.
local SHARD = string.sub(JOBS, 1, -6)
local GROUPS_READY = SHARD .. ':groups-ready'
-- A job's log (JobContext.log): a list named from the shard's prefix, as RedisKeySpace.topic's logsPrefix
-- names it. Every script that deletes a job's body deletes its log with it (dropLogs).
local function logsKey(id) return SHARD .. ':logs:' .. id end
local function dropLogs(id) redis.call('del', logsKey(id)) end
local function fmt(n) return string.format('%.0f', n) end
local clock = redis.call('TIME')
local nowMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local nowUs = tonumber(clock[1]) * 1000000 + tonumber(clock[2])

-- The next free score for a job due at dueMs: after every job already waiting for that millisecond
-- (FIFO); a full millisecond spills into the next one, so a job is never due earlier than asked.
local cachedMs, cachedScore = -1, 0
local function scoreFor(dueMs)
  local ms = dueMs
  while true do
    local base = ms * SLOTS
    local top = base - 1
    if ms == cachedMs then
      top = cachedScore
    else
      local last = redis.call('zrevrangebyscore', DUE, fmt(base + SLOTS - 1), fmt(base), 'withscores', 'limit', 0, 1)
      if last[2] then top = tonumber(last[2]) end
    end
    if top < base + SLOTS - 1 then
      cachedMs, cachedScore = ms, top + 1
      return top + 1
    end
    ms = ms + 1
  end
end

local PRIORITY, PRIORITIZED = SHARD .. ':priority', SHARD .. ':prioritized'
local PRIORITY_SPAN = ${PRIORITY_SEQ_SPAN}

local function priorityOf(body) return tonumber(jobField(body, 'priority') or 0) or 0 end

-- PRIORITY's 'ready' bound, read once per script; false for a topic that never had a priority.
local readyBound = nil
local function priorityReadyUpTo()
  if readyBound == nil then
    local ready = redis.call('hget', PRIORITY, 'ready')
    readyBound = ready and tonumber(ready) or false
  end
  return readyBound
end

local function setReadyUpTo(score)
  redis.call('hset', PRIORITY, 'ready', fmt(score))
  readyBound = score
end

-- A job with a priority makes its topic use PRIORITIZED from now on (nothing of DUE is ready yet).
local function usePriorities()
  if not priorityReadyUpTo() then setReadyUpTo(-1) end
end

-- Adds ids (jobs of DUE that are due) to PRIORITIZED in this order, with their priorities.
local function makeReady(ids, priorities)
  local n = #ids
  if n == 0 then return end
  local last = redis.call('hincrby', PRIORITY, 'seq', n)
  local args = {}
  for k = 1, n do
    args[#args + 1] = fmt(priorities[k] * PRIORITY_SPAN + (last - n + k) % PRIORITY_SPAN)
    args[#args + 1] = ids[k]
  end
  redis.call('zadd', PRIORITIZED, unpack(args))
end

-- Queues a job in DUE at score. With priorities: a due job is made ready at once when every job
-- before it in DUE already is (the ready bound moves up to it), or when it lands at or below the
-- bound (a retry, a recovery, a hand-back, a past time); a later one waits for makeDueReady.
local function queueDue(id, score, body)
  redis.call('zadd', DUE, score, id)
  local ready = priorityReadyUpTo()
  if not ready then return end
  if score > ready and score < (nowMs + 1) * SLOTS then
    if #redis.call('zrangebyscore', DUE, '(' .. fmt(ready), '(' .. fmt(score), 'limit', 0, 1) == 0 then
      setReadyUpTo(score)
      ready = score
    end
  end
  if score <= ready then makeReady({ id }, { priorityOf(body) }) end
end

-- Takes a job out of DUE (and of PRIORITIZED); 1 if it was in DUE.
local function unqueueDue(id)
  local removed = redis.call('zrem', DUE, id)
  if removed == 1 and priorityReadyUpTo() then redis.call('zrem', PRIORITIZED, id) end
  return removed
end

-- The claim's move: up to ${PRIORITY_MOVE_BATCH} jobs of DUE that came due since the last move (in due
-- order, so seq follows due order) into PRIORITIZED; the ready bound follows them.
local function makeDueReady()
  local ready = priorityReadyUpTo()
  local limit = (nowMs + 1) * SLOTS
  local rows = redis.call('zrangebyscore', DUE, '(' .. fmt(ready), '(' .. fmt(limit), 'withscores', 'limit', 0, ${PRIORITY_MOVE_BATCH})
  local ids = {}
  for i = 1, #rows, 2 do ids[#ids + 1] = rows[i] end
  if #ids > 0 then
    local bodies = redis.call('hmget', JOBS, unpack(ids))
    local priorities = {}
    for k = 1, #ids do priorities[k] = bodies[k] and priorityOf(bodies[k]) or 0 end
    makeReady(ids, priorities)
  end
  local upTo = limit - 1
  if #ids == ${PRIORITY_MOVE_BATCH} then upTo = tonumber(rows[#rows]) end
  if upTo ~= ready then setReadyUpTo(upTo) end
end

-- The score of the first job that may start: the head of DUE or the turn of the first ready group.
-- False once a script has seen that the shard has no ready group (a topic without groups): headScore
-- then reads DUE alone. Only a script that adds no group turn afterwards may set it.
local groupsMayBeReady = true

local function headScore()
  local head = redis.call('zrange', DUE, 0, 0, 'withscores')
  local group = groupsMayBeReady and redis.call('zrange', GROUPS_READY, 0, 0, 'withscores') or {}
  local score = head[2] and tonumber(head[2])
  if group[2] and (not score or tonumber(group[2]) < score) then score = tonumber(group[2]) end
  return score
end

-- Wakes one consumer blocked on the marker (BZPOPMIN serves exactly one).
local function wake(ms)
  redis.call('zadd', MARKER, ms, 'wake')
end

-- The body if the job is claimed (in ACTIVE) under this exact claim token, else nil.
local function ownedBody(id, token)
  if not redis.call('zscore', ACTIVE, id) then return nil end
  local body = redis.call('hget', JOBS, id)
  if not body or tokenOf(body) ~= token then return nil end
  return body
end

-- ownedBody for a batch: the pairs id, claim token at ARGV[first], ARGV[first + stride], ... (two
-- reads for the whole batch); per pair its id and its body, or false when not claimed under it.
local function ownedBodies(first, stride)
  local ids = {}
  for i = first, #ARGV, stride do ids[#ids + 1] = ARGV[i] end
  if #ids == 0 then return ids, ids end
  local bodies = redis.call('hmget', JOBS, unpack(ids))
  local active = redis.call('zmscore', ACTIVE, unpack(ids))
  for k = 1, #ids do
    local body = bodies[k]
    if not (body and active[k] and tokenOf(body) == ARGV[first + stride * (k - 1) + 1]) then bodies[k] = false end
  end
  return ids, bodies
end
`,
};
