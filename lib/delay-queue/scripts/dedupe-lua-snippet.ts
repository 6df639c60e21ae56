import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';
import { LUA_STORE_JOB } from './store-job-lua-snippet.js';

/**
 * How long a debounce key outlives its job's due time, in ms. The key names the waiting job that the
 * next call restarts; a job still not started this long after it was due (no consumer running) is
 * forgotten by its key, so a call after that starts a second job.
 */
export const DEBOUNCE_KEY_GRACE_MS = 3_600_000;

/**
 * Lua: a dedupe key, `<shard>:dedupe:<key>` (the topic's hash tag, so the schedule's cluster slot),
 * a string holding the id of the job that holds the key, and its release by cancel-job. The key is
 * checked at schedule (dedupe-spec.ts): no quote, backslash or control character.
 */
export const LUA_DEDUPE_KEY: LuaSnippet = {
  name: 'dedupeKey',
  requires: [LUA_TOPIC_PRELUDE],
  source: `
-- The mode letter ('t' throttle, 'd' debounce), the ttl (ms) and the key name of a stored dedupe
-- (dedupe-spec.ts: encodeDedupe, '<mode><ttl>:<key>').
local function dedupeOf(stored)
  local mode, ttl, key = string.match(stored, '^(%a)(%d+):(.+)$')
  return mode, tonumber(ttl), SHARD .. ':dedupe:' .. key
end

-- A job taken out (cancelled): its dedupe key, if it still names this job, is freed at once.
local function releaseDedupe(id, body)
  local stored = jobField(body, 'dedupe')
  if not stored then return end
  local _, _, name = dedupeOf(stored)
  if redis.call('get', name) == id then redis.call('del', name) end
end

-- A job moved to dueMs (rescheduled): a debounce key that still names it lives until
-- DEBOUNCE_KEY_GRACE_MS past its new due time, as writeDeduped sets it for the due time it gives.
local function dedupeFollowsDueTime(id, body, dueMs)
  local stored = jobField(body, 'dedupe')
  if not stored then return end
  local mode, _, name = dedupeOf(stored)
  if mode == 'd' and redis.call('get', name) == id then
    redis.call('pexpire', name, math.max(1, dueMs - nowMs) + ${DEBOUNCE_KEY_GRACE_MS})
  end
end
`,
};

/**
 * Lua: storing a job scheduled with a dedupe, for schedule-jobs and write-outbox-job (which make a
 * call safe to run twice with their operation records: a second run never restarts a debounce).
 */
export const LUA_DEDUPE_WRITE: LuaSnippet = {
  name: 'dedupeWrite',
  requires: [LUA_STORE_JOB, LUA_DEDUPE_KEY],
  source: `
-- Takes out job id if it is waiting with no attempt counted (stored, not running, not dead; never
-- started, or its run threw JobRateLimitedError, which gives its attempt back; a job waiting for a
-- retry has an attempt counted), as makeRoomFor would to replace it, its log dropped with it (the job
-- that replaces it starts a log of its own); whether it was.
local function takeOutNotStarted(id)
  local body = redis.call('hget', JOBS, id)
  if not body or attemptsOf(body) ~= 0 or redis.call('zscore', ACTIVE, id) or redis.call('zscore', DEAD, id) then
    return false
  end
  if unqueueDue(id) == 1 then groupJobFinished(body) else removeFromGroup(id, body) end
  dropLogs(id)
  return true
end

-- Writes job id (kind, when, tail as storeJob takes them) under its stored dedupe. Returns its status
-- (makeRoomFor's: 1 created, 0 kept the key's job, 2 replaced it), the id of the job concerned (this
-- one, or the key's holder), and the score to wake for when a job was stored (else nil).
-- Throttle: the key's holder, while the key lives (ttl from the call that created it, even after
-- the job ran), keeps the key; else this job is stored and holds the key for ttl.
-- Debounce: the key's holder, if it has no attempt counted, is replaced by this call's job under its own id,
-- due ttl from now; else (none, running, done, waiting for a retry) this job is stored, due ttl from
-- now. The key then lives until DEBOUNCE_KEY_GRACE_MS past the due time.
local function writeDeduped(id, stored, kind, when, tail)
  local mode, ttl, name = dedupeOf(stored)
  local holder = redis.call('get', name)
  if mode == 't' then
    if holder then return 0, holder, nil end
    local score = storeJob(id, dueMsOf(kind, when), tail)
    redis.call('set', name, id, 'px', ttl)
    return 1, id, score
  end
  local status = 1
  if holder and takeOutNotStarted(holder) then id, status = holder, 2 end
  local score = storeJob(id, nowMs + ttl, tail)
  redis.call('set', name, id, 'px', ttl + ${DEBOUNCE_KEY_GRACE_MS})
  return status, id, score
end
`,
};
