import { RedisScript } from '../../core/redis/redis-script.js';
import { MAX_PROGRESS_BYTES } from '../jobs/job-codec.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Longest job header (attempts, times, progress, last error: everything before the payload) a job
 * list reads; the consumer keeps last errors to 2000 characters, at most 12 kB as escaped JSON, and
 * progress to MAX_PROGRESS_BYTES (job-codec.ts), at most twice that as a JSON string. A longer
 * header was not written by this library and is listed as unreadable.
 */
const MAX_LISTED_HEADER_BYTES = 16_384 + 2 * MAX_PROGRESS_BYTES + 16;

/**
 * Lists the jobs of one topic in one state, from one snapshot (see TopicInspector).
 *
 * KEYS  the five topic keys (see lua-snippets.ts); KEYS[6] the completed zset, needed for 'completed'
 * ARGV[1] state: 'due' (due now, oldest first), 'scheduled' (due later, soonest first),
 *         'active' (earliest visibility deadline first), 'dead' (newest first) or 'completed'
 *         (kept completed jobs, newest first; an id scheduled again meanwhile is left out)
 * ARGV[2] how many at most
 * ARGV[3] bytes of each payload to return (its preview)
 *
 * Returns { nowMs, total in that state, then per job: id, score, header, payload head, payload bytes }.
 * Only the first ARGV[3] bytes of each payload leave Redis, with the payload's whole
 * size, so a refresh over large jobs costs about that many bytes per job, not the jobs. `header` is
 * the body up to its payload (job-codec.ts: decodeHeader reads it), or false for a body this library
 * did not write, whose own first bytes and size then stand in for the payload's. A job whose body is
 * gone (acknowledged or trimmed meanwhile) is left out. Scores are strings (due scores have 16 digits).
 */
export const listJobsScript = new RedisScript(
  'listJobs',
  `
local state, limit, PREVIEW = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local dueEnd = fmt((nowMs + 1) * SLOTS)
local rows, total
if state == 'due' then
  rows = redis.call('zrangebyscore', DUE, '-inf', '(' .. dueEnd, 'withscores', 'limit', 0, limit)
  total = redis.call('zcount', DUE, '-inf', '(' .. dueEnd)
elseif state == 'scheduled' then
  rows = redis.call('zrangebyscore', DUE, dueEnd, '+inf', 'withscores', 'limit', 0, limit)
  total = redis.call('zcount', DUE, dueEnd, '+inf')
elseif state == 'active' then
  rows = redis.call('zrange', ACTIVE, 0, limit - 1, 'withscores')
  total = redis.call('zcard', ACTIVE)
elseif state == 'dead' then
  rows = redis.call('zrevrange', DEAD, 0, limit - 1, 'withscores')
  total = redis.call('zcard', DEAD)
elseif state == 'completed' and KEYS[6] then
  rows = redis.call('zrevrange', KEYS[6], 0, limit - 1, 'withscores')
  total = redis.call('zcard', KEYS[6])
else
  return redis.error_reply('ERR unknown job state ' .. state)
end
local MAX_HEADER = ${MAX_LISTED_HEADER_BYTES}
local result = { nowMs, total }
for i = 1, #rows, 2 do
  local body = redis.call('hget', JOBS, rows[i])
  if body and state == 'completed' and (redis.call('zscore', DUE, rows[i]) or redis.call('zscore', ACTIVE, rows[i]) or redis.call('zscore', DEAD, rows[i])) then
    body = nil
  end
  if body then
    local job, from, to, headerEnd = jobHeader(body)
    local header, head, size = false, nil, nil
    if job and headerEnd <= MAX_HEADER then
      header = string.sub(body, 1, headerEnd)
      size = to - from + 1
      head = string.sub(body, from, from - 1 + math.min(size, PREVIEW))
    else
      size = #body
      head = string.sub(body, 1, PREVIEW)
    end
    result[#result + 1] = rows[i]
    result[#result + 1] = rows[i + 1]
    result[#result + 1] = header
    result[#result + 1] = head
    result[#result + 1] = size
  end
end
return result
`,
  [LUA_TOPIC_PRELUDE],
);
