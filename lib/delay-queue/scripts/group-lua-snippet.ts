import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_BASE } from './topic-base-lua-snippet.js';

/**
 * Lua: job groups (`schedule(topic, payload, { group })`): the jobs of one group start one at a
 * time (or `groupConcurrency` at a time), in due order, while other groups go on in parallel.
 *
 * A job of a group is in exactly one of these places:
 * - its group's queue `<shard>:group:<group>` (zset id -> due score), waiting for its turn;
 * - out of it: claimed (ACTIVE), or back in DUE waiting for a retry or after its consumer lost its
 *   visibility (it keeps its turn: no later job of the group starts meanwhile), or DEAD;
 *   `<shard>:groups-out` (hash group -> count) counts the group's jobs that are out and not dead.
 * `<shard>:groups-waiting` (zset id -> due score) lists every job waiting in some group's queue, with
 * its score there: the job list's 'waiting-group' state, read page by page without visiting every
 * group (kept by addToGroup, takeFromGroup and removeFromGroup, the only writers of a group's queue).
 * `<shard>:groups-ready` (zset group -> score) lists every group with a waiting job and fewer than
 * its limit out; the claim takes a group's first job from there (`takeFromGroup`). Invariant, kept
 * by every script that moves a job of a group: a group is on it exactly when it has a waiting job
 * and fewer than `<shard>:group-limit` (absent: 1) out.
 *
 * A running job of a group that leaves for good while its handler may still run (cancelled, or
 * replaced) keeps its group's turn: `<shard>:groups-held` (zset claim token -> the claim's
 * visibility deadline) and `<shard>:groups-held-names` (hash claim token -> group) hold it until
 * that delivery reports back (release-group-turn, or any acknowledgement, failure or hand-back it
 * sends under that token, which finds the job gone) or the deadline passes (the claim's recovery
 * step), so no other job of the group starts while it may still run. Its consumer pushes the
 * deadline back with every visibility extension while the handler runs (extend-jobs).
 *
 * Fairness: a ready group's score is its first job's due score, except after one of its jobs
 * finished: then not before the finish time, so it goes behind the groups that were already
 * waiting (round robin), and a group with 10,000 jobs does not starve one with 1.
 *
 * The group is recorded in the job's header (its `group` field, read with groupOf from
 * job-header-lua-snippet.ts). These keys are named here from the shard's JOBS key
 * (same hash tag, same cluster slot) rather than passed in KEYS: every script that moves jobs
 * touches them, and a topic without groups never reads more than GROUPS_READY's head.
 */
export const LUA_GROUPS: LuaSnippet = {
  name: 'groups',
  requires: [LUA_TOPIC_BASE],
  source: `
local GROUPS_OUT = SHARD .. ':groups-out'
local GROUPS_HELD = SHARD .. ':groups-held'
local GROUPS_HELD_NAMES = SHARD .. ':groups-held-names'
local GROUP_LIMIT = SHARD .. ':group-limit'
local GROUPS_WAITING = SHARD .. ':groups-waiting'
local function groupKey(group) return SHARD .. ':group:' .. group end

-- The next free score at dueMs in a group's queue: after the group's jobs due in that millisecond
-- (schedule order), spilling into the next millisecond when one is full.
local function groupScoreFor(group, dueMs)
  local key, ms = groupKey(group), dueMs
  while true do
    local base = ms * SLOTS
    local last = redis.call('zrevrangebyscore', key, fmt(base + SLOTS - 1), fmt(base), 'withscores', 'limit', 0, 1)
    local top = last[2] and tonumber(last[2]) or base - 1
    if top < base + SLOTS - 1 then return top + 1 end
    ms = ms + 1
  end
end

local cachedGroupLimit = nil
local function groupLimit()
  if not cachedGroupLimit then cachedGroupLimit = tonumber(redis.call('get', GROUP_LIMIT)) or 1 end
  return cachedGroupLimit
end

local function outOf(group)
  return tonumber(redis.call('hget', GROUPS_OUT, group)) or 0
end

-- Restores the invariant for one group. notBefore: the score its turn may not come before (one of
-- its jobs just finished or started: round robin), or nil to keep a turn already given as long as
-- it is not earlier than the group's first job. Returns the group's ready score, or nil.
local function refreshGroup(group, notBefore)
  local head = redis.call('zrange', groupKey(group), 0, 0, 'withscores')
  if head[2] and outOf(group) < groupLimit() then
    local score = tonumber(head[2])
    if notBefore then
      if score < notBefore then score = notBefore end
    else
      local current = tonumber(redis.call('zscore', GROUPS_READY, group))
      if current and current >= score then return current end
    end
    redis.call('zadd', GROUPS_READY, score, group)
    groupsMayBeReady = true
    return score
  end
  redis.call('zrem', GROUPS_READY, group)
  return nil
end

-- Queues a new job of a group (its body is stored). Returns the group's ready score when the
-- group may start a job (so the caller can wake a consumer), else nil.
local function addToGroup(group, id, score)
  local key = groupKey(group)
  local head = redis.call('zrange', key, 0, 0, 'withscores')
  redis.call('zadd', key, score, id)
  redis.call('zadd', GROUPS_WAITING, score, id)
  local current = tonumber(redis.call('zscore', GROUPS_READY, group))
  if current and head[2] and current == tonumber(head[2]) and score < current then
    -- The group's turn stood at its first job, and this one is due earlier.
    redis.call('zadd', GROUPS_READY, score, group)
    groupsMayBeReady = true
    return score
  end
  return refreshGroup(group, nil)
end

-- One of the group's jobs out is done: the group may start its next one (behind the groups
-- already waiting).
local function releaseTurn(group)
  if redis.call('hincrby', GROUPS_OUT, group, -1) <= 0 then redis.call('hdel', GROUPS_OUT, group) end
  local turn = refreshGroup(group, nowMs * SLOTS)
  -- A consumer may be asleep until a later time: the group's next job is due now.
  if turn then wake(math.floor(turn / SLOTS)) end
end

-- A job of a group left for good or went dead with no handler of it running (acknowledged, buried,
-- or cancelled while waiting for its retry).
local function groupJobFinished(body)
  local group = groupOf(body)
  if group then releaseTurn(group) end
end

-- A running job of a group left for good (cancelled, replaced): its turn is held until its
-- delivery reports back or its claim's deadline passes (see the header).
local function holdGroupTurn(body, deadline)
  local group = groupOf(body)
  local token = tokenOf(body)
  if group and token then
    redis.call('zadd', GROUPS_HELD, deadline, token)
    redis.call('hset', GROUPS_HELD_NAMES, token, group)
  end
end

-- The delivery with this claim token still runs (its consumer extends it): its held turn, if any, lasts.
local function extendHeldTurn(token, deadline)
  redis.call('zadd', GROUPS_HELD, 'xx', deadline, token)
end

-- Releases the turn held for the delivery with this claim token, once: true when it was held.
local function releaseHeldTurn(token)
  if redis.call('zrem', GROUPS_HELD, token) == 0 then return false end
  local group = redis.call('hget', GROUPS_HELD_NAMES, token)
  redis.call('hdel', GROUPS_HELD_NAMES, token)
  if group then releaseTurn(group) end
  return true
end

-- The claim's recovery: held turns whose delivery's deadline passed (bounded work per call).
local function releaseExpiredTurns()
  local expired = redis.call('zrangebyscore', GROUPS_HELD, '-inf', fmt(nowMs), 'limit', 0, 100)
  for _, token in ipairs(expired) do releaseHeldTurn(token) end
end

-- Takes a waiting job out of its group's queue wherever it stands (cancel, replace). Returns
-- whether it was there.
local function removeFromGroup(id, body)
  local group = groupOf(body)
  if not group or redis.call('zrem', groupKey(group), id) == 0 then return false end
  redis.call('zrem', GROUPS_WAITING, id)
  refreshGroup(group, nil)
  return true
end

-- The due score of a job waiting in its group's queue, or nil.
local function groupQueueScore(id, body)
  local group = groupOf(body)
  if not group then return nil end
  return redis.call('zscore', groupKey(group), id)
end

-- The claim's side: the first waiting job of a ready group, now out. Returns its id and due score,
-- or nil (an empty queue: the group leaves the ready set).
local function takeFromGroup(group)
  if outOf(group) >= groupLimit() then
    -- The limit was lowered since the group got its turn.
    redis.call('zrem', GROUPS_READY, group)
    return nil
  end
  local key = groupKey(group)
  local head = redis.call('zrange', key, 0, 0, 'withscores')
  if not head[1] then
    redis.call('zrem', GROUPS_READY, group)
    return nil
  end
  redis.call('zrem', key, head[1])
  redis.call('zrem', GROUPS_WAITING, head[1])
  redis.call('hincrby', GROUPS_OUT, group, 1)
  refreshGroup(group, tonumber(head[2]))
  return head[1], tonumber(head[2])
end
`,
};
