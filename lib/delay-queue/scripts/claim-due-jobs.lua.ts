import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_FENCE_SERIES } from '../../core/redis/fence-lua-snippets.js';
import { LUA_COMPLETE_JOB } from './complete-job-lua-snippet.js';

/**
 * The consumer's one round trip: acknowledges finished jobs (completeJob), returns expired in-flight jobs to the
 * queue (their consumer crashed or stalled; no separate scheduler process needed), then claims up
 * to N due jobs into ACTIVE with a visibility deadline, in due order.
 *
 * A claim is safe to run twice (a re-sent command whose reply was lost): KEYS[6] is the claim's
 * record, one key per claim call (consumer id + sequence), kept for the visibility timeout. It lists
 * the ids and claim tokens the first run took; a second run returns those of them it still holds
 * (same bodies, same tokens, same deadlines) and claims nothing new, so no job is left claimed by a
 * reply nobody received, which would cost it an attempt (and a job on its last attempt would go to
 * the dead letters without ever running). Acknowledgements and recovery are state checks, no-ops
 * when repeated.
 *
 * KEYS  the five topic keys, KEYS[6] the claim's record (see lua-snippets.ts), KEYS[7] the topic
 *       shard's fencing counter (`<topic keys>:fence`, see job-fence.ts), KEYS[8] the shard's pause
 *       flag (present: claim nothing), KEYS[9] the shard's rate log (zset claim -> server µs); for a
 *       consumer that keeps completed jobs, KEYS[10] the completed zset and KEYS[11] the results hash
 *       (complete-job-lua-snippet.ts); last (KEYS[10], or KEYS[12] after the completed keys) the
 *       record of this consumer's previous claim, whose reply has arrived: deleted. KEYS[6..] are
 *       optional (a claim without KEYS[7] gives tokens above the job's last one and the clock,
 *       without the counter; without KEYS[8] and KEYS[9], no pause and no rate limit)
 * ARGV[1] max jobs to claim, ARGV[2] visibility timeout ms, ARGV[3] default max attempts,
 * ARGV[4] dead-letter max count, ARGV[5] dead-letter max age ms,
 * ARGV[6] rate limit: claims allowed per window on this shard (0 or absent: no limit), ARGV[7] the
 * window, ms, then the acknowledgements:
 *   without the completed keys, ARGV[8..] pairs: id, claim token (a topic that keeps no completed
 *   job pays nothing for the feature);
 *   with them, ARGV[8] most completed jobs kept (0: no bound), ARGV[9] ms kept (0: no bound),
 *   ARGV[10..] triples: id, claim token, result JSON ('' for none). Kept completed jobs are trimmed
 *   by age on every claim of such a consumer, acknowledgements or not; while some over a bound are
 *   left (a backlog beyond one call's step), nextWakeMs is now.
 *
 * Jobs of a group are taken from the ready groups (group-lua-snippet.ts) merged with DUE in score
 * order, one per group per turn. While the pause flag is present nothing is claimed (acknowledgements
 * and recovery go on) and no consumer is woken for due jobs. With a rate limit, the claims of the
 * last window (ARGV[7] ms on the server clock, a sliding log) never exceed ARGV[6]; jobs over it
 * wait, and nextWakeMs says when the window lets the next one through. The log is the shard's, shared
 * by consumers of other windows and maxima: each counts every claim within its own window.
 *
 * Returns { nowUs (server time in µs), nextWakeMs (-1: nothing pending), moreDue (0|1), acked, { id, body, dueScore, ... },
 *           { id, attempts, maxAttempts, 1 (requeued) | 0 (buried: that was its last attempt), ... } for the expired jobs taken back,
 *           nextDueMs (the due time of the first job still waiting; -1: none), claimedUs (when the
 *           returned jobs were claimed: now, or for a second run the first run's time, which the
 *           claim's record keeps after its id/token/score triples: the start a rate limit counted) }.
 * Every claim gives the job a new claim token, which is also its fencing token (`JobContext.fencingToken`):
 * issueFences (fence-lua-snippets.ts) makes it greater than the job's previous token and than every
 * token the shard's counter handed out, and at least the server clock in µs, so it still grows
 * after the counter or the whole database was lost (as long as the server clock does not go back).
 * The token is stored in the body, so a stale delivery's ack, failure or extension stays refused.
 * dueScore is the job's score in the due set (due ms * SLOTS + FIFO slot): a hand-back (release-jobs)
 * puts the job back at that very place.
 *
 * nextWakeMs is the earliest of the next due time, the next visibility deadline and the next held
 * group turn's deadline. When due jobs
 * remain after this claim, another consumer is woken (a chain, so a burst spreads over all consumers).
 */
export const claimDueJobsScript = new RedisScript(
  'claimDueJobs',
  `
local FENCE, PAUSED, RATE = KEYS[7], KEYS[8], KEYS[9]
local maxClaims, visibility = tonumber(ARGV[1]), tonumber(ARGV[2])
local defaultMaxAttempts, deadMaxCount, deadMaxAge = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local rateMax, rateWindowMs = tonumber(ARGV[6]) or 0, tonumber(ARGV[7]) or 0
local rateWindowUs = rateWindowMs * 1000
if not RATE then rateMax = 0 end
-- #KEYS is 9 or 10 (previous record) without kept completed jobs, 11 or 12 with them.
local keep, firstAck, stride, PREVIOUS = nil, 8, 2, KEYS[10]
if #KEYS >= 11 then keep, firstAck, stride, PREVIOUS = keepOf(KEYS[10], KEYS[11], ARGV[8], ARGV[9]), 10, 3, KEYS[12] end

-- Batched reads and writes: this runs for every burst of finished jobs.
local acked, trimLeft = 0, false
if #ARGV >= firstAck then
  local ids, bodies = ownedBodies(firstAck, stride)
  for k, id in ipairs(ids) do
    local at = firstAck + stride * (k - 1)
    if bodies[k] then
      completeJob(id, bodies[k], keep and ARGV[at + 2], keep)
    else
      releaseHeldTurn(ARGV[at + 1]) -- cancelled or replaced while it ran: its handler has returned
    end
  end
end
acked, trimLeft = finishCompletions(keep)

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
      redis.call('zadd', DUE, scoreFor(nowMs), id)
    else
      bury(id, body, '"Visibility timeout passed without an acknowledgement on the last attempt (the consumer crashed, stalled or lost Redis)"', deadMaxCount, deadMaxAge)
    end
    recovered[#recovered + 1] = id
    recovered[#recovered + 1] = attemptsOf(body) or 0
    recovered[#recovered + 1] = maxAttempts
    recovered[#recovered + 1] = requeued and 1 or 0
  end
end
trimDeadByAge(deadMaxAge)
-- One read tells whether the shard uses pause, groups or held turns at all: a plain topic pays it alone.
local extras = {}
if PAUSED then extras[#extras + 1] = PAUSED end
extras[#extras + 1] = GROUPS_READY
extras[#extras + 1] = GROUPS_HELD
local plain = redis.call('exists', unpack(extras)) == 0
if plain then
  groupsMayBeReady = false -- until a group's turn is added (refreshGroup sets it again)
else
  releaseExpiredTurns()
end

if PREVIOUS then redis.call('del', PREVIOUS) end
local paused = not plain and PAUSED ~= nil and redis.call('exists', PAUSED) == 1
-- The rate log is shared by the shard's consumers whatever their windows. A claim is a member
-- '<id>@<token>' scored with its server µs (> 0). Each window in use is a member '~w:<ms>' scored
-- -(its expiry, ms): the last claim call with that window plus the window plus a minute (a consumer
-- held back by its own limit, or idle, calls again within its window or its maxIdleWait, and must then
-- still find the others' claims of its whole window); it is never counted, and no trim of claims
-- (scores from 0) touches it. A claim is forgotten only once older than the widest live window, so
-- every consumer counts all claims of its own window, and a consumer's own claims stay in the log for
-- its whole window.
if rateMax > 0 then
  redis.call('zremrangebyscore', RATE, '(' .. fmt(-nowMs), '(0')
  redis.call('zadd', RATE, fmt(-(nowMs + rateWindowMs + 60000)), '~w:' .. fmt(rateWindowMs))
  local widestMs = rateWindowMs
  for _, window in ipairs(redis.call('zrangebyscore', RATE, '-inf', '(0')) do
    local ms = tonumber(string.sub(window, 4))
    if ms and ms > widestMs then widestMs = ms end
  end
  redis.call('zremrangebyscore', RATE, 0, fmt(nowUs - widestMs * 1000))
  -- The key outlives every live window (a longer TTL set by a wider one stays).
  local ttl = rateWindowMs + 1000
  if redis.call('pttl', RATE) < ttl then redis.call('pexpire', RATE, ttl) end
end
-- With a rate limit: how many claims this consumer's window still allows.
local allowed = maxClaims
local sinceUs = '(' .. fmt(nowUs - rateWindowUs)
if rateMax > 0 and maxClaims > 0 and not paused then
  allowed = math.max(0, math.min(maxClaims, rateMax - redis.call('zcount', RATE, sinceUs, '+inf')))
end
local claimed = {}
-- When the claimed jobs were taken: now, or for a second run, the first run's time (in its record).
local claimedUs = nowUs
local prior = OPERATION and redis.call('lrange', OPERATION, 0, -1) or {}
if #prior > 0 then
  claimedUs = tonumber(prior[#prior])
  for i = 1, #prior - 1, 3 do
    local id, token = prior[i], prior[i + 1]
    local body = ownedBody(id, token)
    if body then
      claimed[#claimed + 1] = id
      claimed[#claimed + 1] = body
      claimed[#claimed + 1] = tonumber(prior[i + 2])
    end
  end
elseif allowed > 0 and not paused then
  -- The first 'allowed' of DUE and of the ready groups' turns, merged in score order.
  local limit = fmt((nowMs + 1) * SLOTS)
  local rows = redis.call('zrangebyscore', DUE, '-inf', '(' .. limit, 'withscores', 'limit', 0, allowed)
  local turns = plain and {} or redis.call('zrangebyscore', GROUPS_READY, '-inf', '(' .. limit, 'withscores', 'limit', 0, allowed)
  local ids, scores, fromDue = {}, {}, 0
  local r, t = 1, 1
  while #ids < allowed and (rows[r] or turns[t]) do
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
  if #ids > 0 then
    local bodies = redis.call('hmget', JOBS, unpack(ids))
    local deadline = nowMs + visibility
    local taken, floors = {}, {}
    for k, id in ipairs(ids) do
      local body = bodies[k]
      local job, from, to
      if body then job, from, to = jobHeader(body) end
      if body and not job then
        -- Unreadable: park it with the dead letters instead of failing every claim of the topic.
        bury(id, body, 'null', deadMaxCount, deadMaxAge)
      elseif body then
        taken[#taken + 1] = { id, job, body, from, to, scores[k] }
        floors[#floors + 1] = tonumber(job.token) + 1
      end
    end
    -- One token per delivery, above every token of the topic shard and of the job before it.
    local tokens = issueFences(FENCE, floors, visibility)
    local activeArgs, bodyArgs, recordArgs = {}, {}, {}
    for k, job in ipairs(taken) do
      local id, token, dueScore, header = job[1], tokens[k], job[6], job[2]
      header.token, header.attempts = token, tonumber(header.attempts) + 1
      local body = jobBody(header, job[3], job[4], job[5])
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
      if rateMax > 0 then
        local logArgs = {}
        for k = 1, #taken do
          logArgs[#logArgs + 1] = fmt(nowUs)
          logArgs[#logArgs + 1] = taken[k][1] .. '@' .. tokens[k]
        end
        redis.call('zadd', RATE, unpack(logArgs))
      end
    end
  end
end

-- When the rate limit holds due jobs back: the server ms this consumer's window lets the next claim
-- through, when the (count - max + 1)-th oldest of its claims leaves it.
local rateFreeMs = -1
if rateMax > 0 and not paused then
  local count = redis.call('zcount', RATE, sinceUs, '+inf')
  if count >= rateMax then
    local freeing = redis.call('zrangebyscore', RATE, sinceUs, '+inf', 'withscores', 'limit', count - rateMax, 1)
    if freeing[2] then rateFreeMs = math.floor((tonumber(freeing[2]) + rateWindowUs) / 1000) + 1 end
  end
end

local nextWake, more, nextDue = -1, 0, -1
local head = nil
if not paused then head = headScore() end
if head then
  nextWake = math.floor(head / SLOTS)
  if rateFreeMs > nextWake then nextWake = rateFreeMs end
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
-- A held turn whose delivery stops reporting back frees its group at its deadline: wake for it.
if not plain then
  local firstHeld = redis.call('zrange', GROUPS_HELD, 0, 0, 'withscores')
  local deadline = tonumber(firstHeld[2])
  if deadline and (nextWake < 0 or deadline < nextWake) then nextWake = deadline end
end
-- Kept completed jobs over a bound remain (see finishCompletions): the consumer claims again at once
-- to go on trimming, so a burst leaves no work for a later call of an idle consumer.
if trimLeft and (nextWake < 0 or nextWake > nowMs) then nextWake = nowMs end
return { nowUs, nextWake, more, acked, claimed, recovered, nextDue, claimedUs }
`,
  [LUA_COMPLETE_JOB, LUA_FENCE_SERIES],
);
