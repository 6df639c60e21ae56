import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/** One job of a list, as list-jobs answers it (listed-job.ts turns it into a `ListedJob`). */
export interface ListedRow {
  readonly id: string;
  /** Its score in the state's zset, a string (due scores have 16 digits). */
  readonly score: string;
  /** The body up to its payload, whole however long its fields are, or null for a body this library did not write. */
  readonly header: string | null;
  /** The payload's first bytes (the body's, when unreadable). */
  readonly payloadHead: string;
  /** The payload's whole size in bytes (the body's, when unreadable). */
  readonly payloadBytes: number;
}

/** A list of one shard: the server's now (ms), how many jobs are in that state, and the first of them. */
export interface ListedRows {
  readonly nowMs: number;
  readonly total: number;
  readonly rows: ListedRow[];
}

/**
 * Lists the jobs of one topic in one state, from one snapshot (see TopicInspector). Read-only.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the completed zset; the state:
 * 'due' (due now, oldest first), 'scheduled' (due later, soonest first), 'active' (earliest
 * visibility deadline first), 'dead' (newest first) or 'completed' (kept completed jobs, newest
 * first; an id scheduled again meanwhile is left out); how many at most; the bytes of each payload
 * to return (its preview).
 *
 * Returns { nowMs, total in that state, then per job: id, score, header, payload head, payload bytes },
 * decoded into ListedRows. Only the first `previewBytes` of each payload leave Redis, with the
 * payload's whole size, so a refresh over large jobs costs about that many bytes per job, not the
 * jobs. `header` is the body up to its payload, whole: it ends at the first RS (job-fields.ts), so
 * its length is the sum of the job's fields, which are written by this library and bounded there (a
 * failure is [message, stack] of at most 10 000 characters: up to 60 kB as escaped JSON; progress at
 * most MAX_PROGRESS_BYTES of JSON, escaped again), never cut (job-codec.ts: decodeHeader reads it).
 * It is false for a body this library did not write, whose own first bytes and size then stand in
 * for the payload's.
 * A job whose body is gone (acknowledged or trimmed meanwhile) is left out.
 */
export const listJobsScript = new JobScript(
  'listJobs',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'completed'],
    args: { state: 'text', limit: 'int', previewBytes: 'int' },
    decode: decodeListedRows,
  },
  `
local state, limit, PREVIEW = ARG.state, ARG.limit, ARG.previewBytes
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
elseif state == 'completed' then
  rows = redis.call('zrevrange', KEY.completed, 0, limit - 1, 'withscores')
  total = redis.call('zcard', KEY.completed)
else
  return redis.error_reply('ERR unknown job state ' .. state)
end
local result = { nowMs, total }
for i = 1, #rows, 2 do
  local id = rows[i]
  local body = redis.call('hget', JOBS, id)
  -- A completed id scheduled again meanwhile is that new job, listed in its own state.
  if body and state == 'completed' then
    if redis.call('zscore', DUE, id) or redis.call('zscore', ACTIVE, id) or redis.call('zscore', DEAD, id) then body = nil end
  end
  if body then
    local job, from, to, headerEnd = jobHeader(body)
    local header, head, size = false, nil, nil
    if job then
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

function decodeListedRows(reply: unknown): ListedRows {
  const flat = reply as (string | number | null)[];
  const rows: ListedRow[] = [];
  for (let i = 2; i < flat.length; i += 5) {
    const header = flat[i + 2];
    rows.push({
      id: String(flat[i]),
      score: String(flat[i + 1]),
      header: header === null ? null : String(header),
      payloadHead: String(flat[i + 3]),
      payloadBytes: Number(flat[i + 4]),
    });
  }
  return { nowMs: Number(flat[0]), total: Number(flat[1]), rows };
}
