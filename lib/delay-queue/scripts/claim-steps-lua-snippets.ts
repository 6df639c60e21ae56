import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_FENCE_SERIES } from '../../core/redis/fence-lua-snippets.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/** The dead letter's error of a job whose last attempt never came back (job-claimer.ts reports the same text). */
export const VISIBILITY_EXPIRED_ON_LAST_ATTEMPT =
  'Visibility timeout passed without an acknowledgement on the last attempt (the consumer crashed, stalled or lost Redis)';

/**
 * Lua: recovery, the claim's second step. Jobs whose visibility deadline passed (their consumer
 * crashed or stalled; no separate scheduler process) go back to DUE, or to the dead letters on their
 * last attempt. Returns the flat rows { id, attempts, maxAttempts, 1 requeued | 0 buried }.
 */
export const LUA_RECOVER_EXPIRED: LuaSnippet = {
  name: 'recoverExpired',
  requires: [LUA_TOPIC_PRELUDE],
  source: `
local function recoverExpired(defaultMaxAttempts, deadMaxCount, deadMaxAge)
  local expired = redis.call('zrangebyscore', ACTIVE, '-inf', fmt(nowMs), 'limit', 0, 100)
  local recovered = {}
  for _, id in ipairs(expired) do
    redis.call('zrem', ACTIVE, id)
    local body = redis.call('hget', JOBS, id)
    if body then
      local attempts = attemptsOf(body) or math.huge
      local maxAttempts = maxAttemptsOf(body) or defaultMaxAttempts
      local requeued = attempts < maxAttempts
      if requeued then
        queueDue(id, scoreFor(nowMs), body)
      else
        bury(id, body, ${JSON.stringify(JSON.stringify(VISIBILITY_EXPIRED_ON_LAST_ATTEMPT))}, deadMaxCount, deadMaxAge)
      end
      recovered[#recovered + 1] = id
      recovered[#recovered + 1] = attemptsOf(body) or 0
      recovered[#recovered + 1] = maxAttempts
      recovered[#recovered + 1] = requeued and 1 or 0
    end
  end
  trimDeadByAge(deadMaxAge)
  return recovered
end
`,
};

/**
 * Lua: the shard's rate log (a sliding log shared by its consumers whatever their windows). A claim
 * is a member '<id>@<token>' scored with its server µs (> 0). Each window in use is a member
 * '~w:<ms>' scored -(its expiry, ms): the last claim call with that window plus the window plus a
 * minute (a consumer held back by its own limit, or idle, calls again within its window or its
 * maxIdleWait, and must then still find the others' claims of its whole window); it is never counted,
 * and no trim of claims (scores from 0) touches it. A claim is forgotten only once older than the
 * widest live window, so every consumer counts all claims of its own window, and a consumer's own
 * claims stay in the log for its whole window.
 */
export const LUA_RATE_LOG: LuaSnippet = {
  name: 'rateLog',
  requires: [LUA_TOPIC_PRELUDE],
  source: `
local function trimRateLog(rateLog, windowMs)
  redis.call('zremrangebyscore', rateLog, '(' .. fmt(-nowMs), '(0')
  redis.call('zadd', rateLog, fmt(-(nowMs + windowMs + 60000)), '~w:' .. fmt(windowMs))
  local widestMs = windowMs
  for _, window in ipairs(redis.call('zrangebyscore', rateLog, '-inf', '(0')) do
    local ms = tonumber(string.sub(window, 4))
    if ms and ms > widestMs then widestMs = ms end
  end
  redis.call('zremrangebyscore', rateLog, 0, fmt(nowUs - widestMs * 1000))
  -- The key outlives every live window (a longer TTL set by a wider one stays).
  local ttl = windowMs + 1000
  if redis.call('pttl', rateLog) < ttl then redis.call('pexpire', rateLog, ttl) end
end

-- How many claims this consumer's window still allows, at most maxClaims.
local function rateAllowance(rateLog, rateMax, windowMs, maxClaims)
  return math.max(0, math.min(maxClaims, rateMax - redis.call('zcount', rateLog, '(' .. fmt(nowUs - windowMs * 1000), '+inf')))
end

local function logClaims(rateLog, ids, tokens)
  local logArgs = {}
  for k = 1, #ids do
    logArgs[#logArgs + 1] = fmt(nowUs)
    logArgs[#logArgs + 1] = ids[k] .. '@' .. tokens[k]
  end
  redis.call('zadd', rateLog, unpack(logArgs))
end

-- When the rate limit holds due jobs back: the server ms this consumer's window lets the next claim
-- through, when the (count - max + 1)-th oldest of its claims leaves it; -1 when it does not.
local function rateFreeMs(rateLog, rateMax, windowMs)
  local sinceUs = '(' .. fmt(nowUs - windowMs * 1000)
  local count = redis.call('zcount', rateLog, sinceUs, '+inf')
  if count < rateMax then return -1 end
  local freeing = redis.call('zrangebyscore', rateLog, sinceUs, '+inf', 'withscores', 'limit', count - rateMax, 1)
  if not freeing[2] then return -1 end
  return math.floor((tonumber(freeing[2]) + windowMs * 1000) / 1000) + 1
end
`,
};

/**
 * Lua: taking jobs, the claim's main step.
 *
 * replayClaim: a second run of a claim (a re-sent command whose reply was lost) finds the first run's
 * record (OPERATION, a list of id, claim token, due score triples, then the claim's server µs) and
 * returns those of its jobs it still holds (same bodies, same tokens) and that time, claiming nothing
 * new; nil for a first run.
 *
 * takeDueJobs: the first `allowed` of DUE and of the ready groups' turns, merged in score order, into
 * ACTIVE until `deadline`; in a topic with priorities, the due jobs of DUE by priority first (PRIORITIZED,
 * see topic-base-lua-snippet.ts), then the groups' turns. Every claim gives the job a new claim token, which is also its fencing
 * token (`JobContext.fencingToken`): issueFences (fence-lua-snippets.ts) makes it greater than the
 * job's previous token and than every token the shard's counter handed out, and at least the server
 * clock in µs. An unreadable body is parked with the dead letters instead of failing every claim of
 * the topic. The claim is recorded (for replayClaim) until the visibility deadline. Returns the flat
 * rows { id, body, due score } and the ids and tokens taken.
 */
export const LUA_TAKE_JOBS: LuaSnippet = {
  name: 'takeJobs',
  requires: [LUA_TOPIC_PRELUDE, LUA_FENCE_SERIES],
  source: `
local function replayClaim()
  local prior = OPERATION and redis.call('lrange', OPERATION, 0, -1) or {}
  if #prior == 0 then return nil end
  local claimed = {}
  for i = 1, #prior - 1, 3 do
    local id, token = prior[i], prior[i + 1]
    local body = ownedBody(id, token)
    if body then
      claimed[#claimed + 1] = id
      claimed[#claimed + 1] = body
      claimed[#claimed + 1] = tonumber(prior[i + 2])
    end
  end
  return claimed, tonumber(prior[#prior])
end

-- The first 'allowed' of PRIORITIZED (smaller priority, then the order they became ready), out of it
-- and of DUE, appended to ids and scores (their DUE scores). An entry whose job is no longer in DUE, or
-- not due there (moved by a script that does not keep PRIORITIZED: an earlier version during an
-- upgrade), is dropped from PRIORITIZED and not taken: the due time is checked here too.
local function prioritizedIds(allowed, ids, scores)
  local ready = redis.call('zrange', PRIORITIZED, 0, allowed - 1)
  if #ready == 0 then return end
  redis.call('zrem', PRIORITIZED, unpack(ready))
  local dueScores = redis.call('zmscore', DUE, unpack(ready))
  local limit = (nowMs + 1) * SLOTS
  local taken = {}
  for k, id in ipairs(ready) do
    local score = dueScores[k] and tonumber(dueScores[k])
    if score and score < limit then
      taken[#taken + 1] = id
      ids[#ids + 1], scores[#scores + 1] = id, score
    end
  end
  if #taken > 0 then redis.call('zrem', DUE, unpack(taken)) end
end

-- The ids and due scores of the first 'allowed' of DUE and of the ready groups' turns, in score
-- order, out of DUE and their groups' queues. With priorities, the due jobs of DUE come from
-- PRIORITIZED first (those that came due past the move's batch wait for the next claim), then
-- the groups' turns.
local function dueIds(allowed, withGroups, prioritized)
  local ids, scores, fromDue = {}, {}, 0
  if prioritized then
    makeDueReady()
    prioritizedIds(allowed, ids, scores)
    allowed = allowed - #ids
    if allowed <= 0 then return ids, scores end
  end
  local limit = fmt((nowMs + 1) * SLOTS)
  local rows = prioritized and {} or redis.call('zrangebyscore', DUE, '-inf', '(' .. limit, 'withscores', 'limit', 0, allowed)
  local turns = withGroups and redis.call('zrangebyscore', GROUPS_READY, '-inf', '(' .. limit, 'withscores', 'limit', 0, allowed) or {}
  local r, t, wanted = 1, 1, #ids + allowed
  while #ids < wanted and (rows[r] or turns[t]) do
    if rows[r] and (not turns[t] or tonumber(rows[r + 1]) <= tonumber(turns[t + 1])) then
      ids[#ids + 1], scores[#scores + 1] = rows[r], tonumber(rows[r + 1])
      fromDue = fromDue + 1
      r = r + 2
    else
      local id, score = takeFromGroup(turns[t])
      if id then ids[#ids + 1], scores[#scores + 1] = id, score end
      t = t + 2
    end
  end
  if fromDue > 0 then redis.call('zremrangebyrank', DUE, 0, fromDue - 1) end
  return ids, scores
end

local function takeDueJobs(allowed, withGroups, prioritized, fence, visibility, deadMaxCount, deadMaxAge)
  local claimed, takenIds, tokens = {}, {}, {}
  local ids, scores = dueIds(allowed, withGroups, prioritized)
  if #ids == 0 then return claimed, takenIds, tokens end
  local bodies = redis.call('hmget', JOBS, unpack(ids))
  local taken, floors = {}, {}
  for k, id in ipairs(ids) do
    local body = bodies[k]
    local claim = body and claimOf(body)
    if body and not claim then
      bury(id, body, 'null', deadMaxCount, deadMaxAge)
    elseif body then
      claim.id, claim.body, claim.dueScore = id, body, scores[k]
      taken[#taken + 1] = claim
      floors[#floors + 1] = tonumber(claim.last) + 1
    end
  end
  -- One token per delivery, above every token of the topic shard and of the job before it.
  tokens = issueFences(fence, floors, visibility)
  local deadline = nowMs + visibility
  local activeArgs, bodyArgs, recordArgs = {}, {}, {}
  for k, claim in ipairs(taken) do
    local id, token, dueScore = claim.id, tokens[k], claim.dueScore
    local body = claimedBody(claim.body, claim, token)
    takenIds[k] = id
    bodyArgs[#bodyArgs + 1] = id
    bodyArgs[#bodyArgs + 1] = body
    activeArgs[#activeArgs + 1] = deadline
    activeArgs[#activeArgs + 1] = id
    claimed[#claimed + 1] = id
    claimed[#claimed + 1] = body
    claimed[#claimed + 1] = dueScore
    recordArgs[#recordArgs + 1] = id
    recordArgs[#recordArgs + 1] = token
    recordArgs[#recordArgs + 1] = fmt(dueScore)
  end
  if #bodyArgs > 0 then
    redis.call('hset', JOBS, unpack(bodyArgs))
    redis.call('zadd', ACTIVE, unpack(activeArgs))
    if OPERATION then
      recordArgs[#recordArgs + 1] = fmt(nowUs)
      redis.call('rpush', OPERATION, unpack(recordArgs))
      redis.call('pexpire', OPERATION, visibility)
    end
  end
  return claimed, takenIds, tokens
end
`,
};

/**
 * Lua: when the consumer should call next, the claim's last step. nextWake is the earliest of the
 * next due time (not before the rate limit lets a claim through), the next visibility deadline and
 * the next held group turn's deadline; -1 for nothing pending. When due jobs remain, another consumer
 * is woken (a chain, so a burst spreads over all consumers). While kept completed jobs over a bound
 * remain (`trimLeft`), the consumer claims again at once to go on trimming. Returns nextWake,
 * moreDue (0|1) and nextDue (the due time of the first job still waiting; -1: none).
 */
export const LUA_NEXT_WAKE: LuaSnippet = {
  name: 'nextWake',
  requires: [LUA_TOPIC_PRELUDE],
  source: `
local function nextWakeOf(paused, withGroups, rateFree, trimLeft)
  local nextWake, more, nextDue = -1, 0, -1
  local head = nil
  if not paused then head = headScore() end
  if head then
    nextWake = math.floor(head / SLOTS)
    if rateFree > nextWake then nextWake = rateFree end
    nextDue = nextWake
    if nextWake <= nowMs then
      more = 1
      wake(nextWake)
    end
  end
  local firstDeadline = redis.call('zrange', ACTIVE, 0, 0, 'withscores')
  if firstDeadline[2] then
    local deadline = tonumber(firstDeadline[2])
    if nextWake < 0 or deadline < nextWake then nextWake = deadline end
  end
  if withGroups then
    local firstHeld = redis.call('zrange', GROUPS_HELD, 0, 0, 'withscores')
    local deadline = tonumber(firstHeld[2])
    if deadline and (nextWake < 0 or deadline < nextWake) then nextWake = deadline end
  end
  if trimLeft and (nextWake < 0 or nextWake > nowMs) then nextWake = nowMs end
  return nextWake, more, nextDue
end
`,
};
