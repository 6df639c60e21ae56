import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/** One job of a list, as list-jobs answers it (listed-job.ts turns it into a `ListedJob`). */
export interface ListedRow {
  readonly id: string;
  /** Its score in the state's zset, a string (due scores have 16 digits). */
  readonly score: string;
  /** The body up to its payload, whole however long its fields are, or null for a body this library did not write. */
  readonly header: string | null;
  /** The payload's first bytes (the body's, when unreadable); the whole body when asked for whole bodies. */
  readonly payloadHead: string;
  /** The payload's whole size in bytes (the body's, when unreadable or whole). */
  readonly payloadBytes: number;
  /** A kept completed job's result as JSON, when whole bodies were asked for and it returned one. */
  readonly resultJson: string | null;
}

/** A place in a state's order, (score, id): a page starts strictly after it. */
export interface ListPosition {
  readonly score: string;
  readonly id: string;
}

/**
 * A page of one shard: the server's now (ms), how many jobs are in that state, the jobs, the last
 * place the page looked at (its next page starts after it), and whether the state may hold more
 * after it.
 */
export interface ListedRows {
  readonly nowMs: number;
  readonly total: number;
  readonly rows: ListedRow[];
  readonly last: ListPosition | null;
  readonly more: boolean;
}

/**
 * Lists the jobs of one topic shard in one state, a page at a time, from one snapshot. Read-only.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the completed zset and the results
 * hash; the state:
 * 'due' (due now, oldest first), 'scheduled' (due later, soonest first), 'active' (earliest
 * visibility deadline first), 'waiting-group' (jobs waiting in their group's queue, by due score:
 * `<shard>:groups-waiting`, group-lua-snippet.ts), 'dead' (newest first) or 'completed' (kept
 * completed jobs, newest first; an id scheduled again meanwhile is left out); how many places to
 * look at; the bytes of each payload to return (its preview), or `whole` for whole bodies (and a
 * kept job's result); the place to start after (`afterScore` '' for the first page).
 *
 * Order and pages: a state's jobs are in the order of (score, id) of its zset (ids compared as
 * bytes, Redis's own order), ascending or, for 'dead' and 'completed', descending. A page looks at
 * the `limit` places that follow the cursor's place in that order (and one more, to say whether any follows), found by rank (ZRANK of the
 * cursor's id when it still has the cursor's score, else ZCOUNT of the scores before it plus the
 * ids of its own score before it): O(log n + limit + jobs sharing the cursor's score), never a
 * scan of the state. A job whose place did not change between two pages is therefore on exactly one
 * of them; one whose score changed (rescheduled, its visibility extended) may be on none or two.
 *
 * Returns { nowMs, total in that state, last place looked at (score, id) or false, more (0|1), then
 * per job: id, score, header, payload head, payload bytes, result }, decoded into ListedRows. Only
 * the first `previewBytes` of each payload leave Redis, with the payload's whole size, so a
 * dashboard refresh over large jobs costs about that many bytes per job, not the jobs. `header` is
 * the body up to its payload, whole: it ends at the first RS (job-fields.ts), so its length is the
 * sum of the job's fields, which are written by this library and bounded there (a failure is
 * [message, stack] of at most 10 000 characters: up to 60 kB as escaped JSON; progress at most
 * MAX_PROGRESS_BYTES of JSON, escaped again), never cut (job-codec.ts: decodeHeader reads it). It
 * is false for a body this library did not write, whose own first bytes and size then stand in for
 * the payload's. A job whose body is gone (acknowledged or trimmed meanwhile) is left out.
 */
export const listJobsScript = new JobScript(
  'listJobs',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'completed', 'results'],
    args: { state: 'text', limit: 'int', previewBytes: 'int', whole: 'flag', afterScore: 'text', afterId: 'text' },
    decode: decodeListedRows,
  },
  `
local state, limit, PREVIEW = ARG.state, ARG.limit, ARG.previewBytes
local dueEnd = (nowMs + 1) * SLOTS
local key, descending, minScore, maxScore = DUE, false, nil, nil
if state == 'due' then
  maxScore = dueEnd - 1
elseif state == 'scheduled' then
  minScore = dueEnd
elseif state == 'active' then
  key = ACTIVE
elseif state == 'waiting-group' then
  key = GROUPS_WAITING
elseif state == 'dead' then
  key, descending = DEAD, true
elseif state == 'completed' then
  key, descending = KEY.completed, true
else
  return redis.error_reply('ERR unknown job state ' .. state)
end
local total
if minScore then total = redis.call('zcount', key, fmt(minScore), '+inf')
elseif maxScore then total = redis.call('zcount', key, '-inf', fmt(maxScore))
else total = redis.call('zcard', key) end

-- Redis orders the members of one score as bytes (memcmp, then the shorter first); Lua's own string
-- comparison follows the server's locale, so ids are compared here byte by byte.
local function idBefore(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The index (0-based, in the listing's direction) of the first place after the cursor.
local start = 0
if ARG.afterScore ~= '' then
  local s, after = tonumber(ARG.afterScore), ARG.afterId
  local current = redis.call('zscore', key, after)
  if current and tonumber(current) == s then
    start = (descending and redis.call('zrevrank', key, after) or redis.call('zrank', key, after)) + 1
  else
    local ties = redis.call('zrangebyscore', key, ARG.afterScore, ARG.afterScore)
    if descending then
      start = redis.call('zcount', key, '(' .. ARG.afterScore, '+inf')
      for _, id in ipairs(ties) do if idBefore(after, id) then start = start + 1 end end
    else
      start = redis.call('zcount', key, '-inf', '(' .. ARG.afterScore)
      for _, id in ipairs(ties) do if idBefore(id, after) then start = start + 1 end end
    end
  end
end
if minScore then start = math.max(start, redis.call('zcount', key, '-inf', '(' .. fmt(minScore))) end

-- One place more than the page: whether the state goes on after it.
local places = descending and redis.call('zrevrange', key, start, start + limit, 'withscores')
  or redis.call('zrange', key, start, start + limit, 'withscores')
local more = 0
if #places > 2 * limit and not (maxScore and tonumber(places[2 * limit + 2]) > maxScore) then more = 1 end
local result = { nowMs, total, false, more }
for i = 1, math.min(#places, 2 * limit), 2 do
  local id, score = places[i], places[i + 1]
  if maxScore and tonumber(score) > maxScore then break end
  result[3] = { score, id }
  local body = redis.call('hget', JOBS, id)
  -- A completed id scheduled again meanwhile is that new job, listed in its own state.
  if body and state == 'completed' then
    if redis.call('zscore', DUE, id) or redis.call('zscore', ACTIVE, id) or redis.call('zscore', DEAD, id)
      or redis.call('zscore', GROUPS_WAITING, id) then body = nil end
  end
  if body then
    local job, from, to, headerEnd = jobHeader(body)
    local header, head, size, kept = false, nil, nil, false
    if job then header = string.sub(body, 1, headerEnd) end
    if ARG.whole then
      head, size = body, #body
      if state == 'completed' then kept = redis.call('hget', KEY.results, id) end
    elseif job then
      size = to - from + 1
      head = string.sub(body, from, from - 1 + math.min(size, PREVIEW))
    else
      size = #body
      head = string.sub(body, 1, PREVIEW)
    end
    for _, v in ipairs({ id, score, header, head, size, kept }) do result[#result + 1] = v end
  end
end
result[4] = more
return result
`,
  [LUA_TOPIC_PRELUDE],
);

function decodeListedRows(reply: unknown): ListedRows {
  const flat = reply as unknown[];
  const rows: ListedRow[] = [];
  for (let i = 4; i < flat.length; i += 6) {
    const header = flat[i + 2];
    const result = flat[i + 5];
    rows.push({
      id: String(flat[i]),
      score: String(flat[i + 1]),
      header: header === null ? null : String(header),
      payloadHead: String(flat[i + 3]),
      payloadBytes: Number(flat[i + 4]),
      resultJson: result === null ? null : String(result),
    });
  }
  const last = flat[2] as [string, string] | null;
  return {
    nowMs: Number(flat[0]),
    total: Number(flat[1]),
    rows,
    last: last ? { score: String(last[0]), id: String(last[1]) } : null,
    more: Number(flat[3]) === 1,
  };
}
