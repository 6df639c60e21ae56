import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { FIELD_START, HEADER_END, JOB_FIELDS, JOB_FORMAT_VERSION, type JobField } from '../jobs/job-fields.js';

const FIELDS: readonly JobField[] = JOB_FIELDS;
const REQUIRED = FIELDS.filter((field) => field.required);
/** A Lua string literal of `text`, control characters as decimal escapes. */
const luaString = (text: string): string => {
  const escaped = [...text].map((ch) => (ch < ' ' ? `\\${ch.charCodeAt(0)}` : ch));
  return `'${escaped.join('')}'`;
};
/** A Lua pattern for one stored value of the field's type (never a separator). */
const valuePattern = (field: JobField): string => (field.type === 'uint' ? '%d+' : `[^${FIELD_START}${HEADER_END}]*`);

if (FIELDS[0]?.name !== 'token' || FIELDS[1]?.name !== 'attempts' || !FIELDS[0].required || !FIELDS[1].required) {
  throw new Error('job-fields.ts: the claim rewrites token and attempts as the first two fields, both required');
}
if (FIELDS.slice(REQUIRED.length).some((field) => field.required)) {
  throw new Error('job-fields.ts: the required fields come first');
}

/** Fields in a row, each value captured. */
const capturing = (fields: readonly JobField[]): string =>
  fields.map((field) => `${FIELD_START}${field.code}(${valuePattern(field)})`).join('');
/** The anchored pattern of all required fields, capturing each, then the position after them. */
const ALL_REQUIRED = luaString(`^${JOB_FORMAT_VERSION}${capturing(REQUIRED)}()`);
/** The token's pattern: the first field. */
const TOKEN = luaString(`^${JOB_FORMAT_VERSION}${FIELD_START}${FIELDS[0].code}(${valuePattern(FIELDS[0])})`);
/** The claim's pattern: token and attempts, then the position after them. */
const CLAIM = luaString(`^${JOB_FORMAT_VERSION}${capturing(FIELDS.slice(0, 2))}()`);

const NAME_OF_CODE = `{ ${FIELDS.map((field) => `${field.code} = '${field.name}'`).join(', ')} }`;
const FIELD_MARKS = `{ ${FIELDS.map((field) => `${field.name} = ${luaString(FIELD_START + field.code)}`).join(', ')} }`;
const REQUIRED_NAMES = REQUIRED.map((field) => field.name).join(', ');
const NEW_JOB_PREFIX = REQUIRED.filter((field) => field.initial !== undefined)
  .map((field) => `${FIELD_START}${field.code}${field.initial}`)
  .join('');
const CREATED_AT = REQUIRED.find((field) => field.name === 'createdAt');
if (!CREATED_AT || REQUIRED.indexOf(CREATED_AT) !== REQUIRED.length - 1) {
  throw new Error('job-fields.ts: createdAt is the last required field');
}

/** The header's text in the table's order: the required fields always, an optional one when the job has it. */
const WRITE_FIELDS = FIELDS.map((field) =>
  field.required
    ? `  parts[#parts + 1] = US .. '${field.code}' .. fieldText(job.${field.name})`
    : `  v = job.${field.name}\n  if v then parts[#parts + 1] = US .. '${field.code}' .. fieldText(v) end`,
).join('\n');

/**
 * Lua: the one reader and writer of a stored job's header, generated from the field table
 * (jobs/job-fields.ts) when this module loads. Every script that reads or changes a job's header
 * goes through these functions; none looks into the payload, which is copied as it is.
 *
 * jobHeader(body)        the header as a table by field name (`job.token`, `job.attempts`, ...: stored
 *                        text), the first and last index of the payload and the last index of the
 *                        header; nil for a body this version cannot read. Reads format 2 and format 1.
 * jobBody(job, body, from, to)  format 2: the header from `job`, then body's bytes from..to (its payload)
 * withJobFields(body, changes)  body with some fields replaced (false: removed); unchanged when unreadable
 * jobField(body, name)   one field's stored text; nil when the job has none, false when unreadable.
 *                        Two plain searches: this runs for every job stored and acknowledged
 * claimOf(body), claimedBody(body, claim, token)  a job's last token and attempts, then the body of
 *                        its next delivery (new token, attempts + 1): one anchored match for format 2
 * newJobBody(createdMs, tail)   a fresh job from a tail (job-codec.ts: encodeBodyTail; a format-1
 *                        tail of an old outbox row or repeat schedule is converted)
 */
export const LUA_JOB_HEADER: LuaSnippet = {
  name: 'jobHeader',
  source: `
local JOB_VERSION, US, RS = ${luaString(JOB_FORMAT_VERSION)}, ${luaString(FIELD_START)}, ${luaString(HEADER_END)}
local JOB_VERSION_BYTE, US_BYTE, RS_BYTE = string.byte(JOB_VERSION), string.byte(US), string.byte(RS)
local JOB_NAME_OF_CODE = ${NAME_OF_CODE}
local JOB_REQUIRED_PATTERN, JOB_CLAIM_PATTERN, JOB_TOKEN_PATTERN = ${ALL_REQUIRED}, ${CLAIM}, ${TOKEN}
local JOB_FIELD_MARK = ${FIELD_MARKS}
local JOB_FIELD_END = '[' .. US .. RS .. ']'
local function fieldText(v)
  if type(v) == 'number' then return string.format('%.0f', v) end
  return v
end

-- Format 1: {"g":..,"a":..,"c":..,"m":..|null,"b":[..]|null,["q":"..",]["t":"..",]["o":"..",]"e":..,"p":<payload>}.
-- "o" and "e" hold no bare quote, so the first ,"e": and then ,"p": are the separators.
local function jobHeaderV1(body)
  local g, a, c, m, at = string.match(body, '^{"g":(%d+),"a":(%d+),"c":(%d+),"m":(%w+),"b":()')
  if not g then return nil end
  local job = { token = g, attempts = a, createdAt = c }
  if m ~= 'null' then job.maxAttempts = m end
  if string.sub(body, at, at + 4) == 'null,' then
    at = at + 5
  else
    local b, after = string.match(body, '^(%b[]),()', at)
    if not b then return nil end
    job.backoff, at = b, after
  end
  local q, afterQ = string.match(body, '^"q":"([^"]*)",()', at)
  if q then job.group, at = q, afterQ end
  local t, afterT = string.match(body, '^"t":"([%x%-]*)",()', at)
  if t then job.traceparent, at = t, afterT end
  local e = string.find(body, ',"e":', at - 1, true)
  if not e then return nil end
  if string.sub(body, at, at + 3) == '"o":' then job.progress = string.sub(body, at + 4, e - 1) end
  local p = string.find(body, ',"p":', e + 5, true)
  if not p or string.byte(body, -1) ~= 125 then return nil end
  local lastError = string.sub(body, e + 5, p - 1)
  if lastError ~= 'null' then job.lastError = lastError end
  return job, p + 5, #body - 1, p - 1
end

local function jobHeader(body)
  if string.byte(body, 1) ~= JOB_VERSION_BYTE then return jobHeaderV1(body) end
  local ${REQUIRED_NAMES}, at = string.match(body, JOB_REQUIRED_PATTERN)
  if not at then return nil end
  local job = { ${REQUIRED.map((field) => `${field.name} = ${field.name}`).join(', ')} }
  -- The optional fields, each up to the next separator, until the header's end.
  while string.byte(body, at) == US_BYTE do
    local code = string.sub(body, at + 1, at + 1)
    local stop = string.find(body, JOB_FIELD_END, at + 2)
    if not stop then return nil end
    local name = JOB_NAME_OF_CODE[code]
    if name then
      job[name] = string.sub(body, at + 2, stop - 1)
    else
      -- A field of a later format: kept as it is when this version rewrites the header.
      job.extra = (job.extra or '') .. string.sub(body, at, stop - 1)
    end
    at = stop
  end
  if string.byte(body, at) ~= RS_BYTE then return nil end
  return job, at + 1, #body, at - 1
end

local function jobBody(job, body, from, to)
  local parts, v = { JOB_VERSION }, nil
${WRITE_FIELDS}
  if job.extra then parts[#parts + 1] = job.extra end
  parts[#parts + 1] = RS
  parts[#parts + 1] = string.sub(body, from, to)
  return table.concat(parts)
end

local function withJobFields(body, changes)
  local job, from, to = jobHeader(body)
  if not job then return body end
  for name, value in pairs(changes) do
    if value == false then job[name] = nil else job[name] = value end
  end
  return jobBody(job, body, from, to)
end

local function jobField(body, name)
  if string.byte(body, 1) ~= JOB_VERSION_BYTE then
    local job = jobHeaderV1(body)
    if not job then return false end
    return job[name]
  end
  -- US <code> occurs once, in the header: no value and no payload holds a control character.
  local at = string.find(body, JOB_FIELD_MARK[name], 2, true)
  if not at then return nil end
  local stop = string.find(body, JOB_FIELD_END, at + 2)
  if not stop then return false end
  return string.sub(body, at + 2, stop - 1)
end

-- A job about to be claimed: a table with its last claim token and its attempts, and what
-- claimedBody needs to rewrite it (the caller may add its own entries); nil when unreadable. Format 2
-- takes one anchored match, as format 1's claim did.
local function claimOf(body)
  local last, attempts, at = string.match(body, JOB_CLAIM_PATTERN)
  if at then return { last = last, attempts = tonumber(attempts), at = at } end
  local job, from, to = jobHeader(body)
  if not job then return nil end
  return { last = job.token, attempts = tonumber(job.attempts), job = job, from = from, to = to }
end

-- The body of the job's next delivery: claim token 'token' (a decimal string), attempts + 1.
local function claimedBody(body, claim, token)
  if claim.at then
    local attempts = fieldText(claim.attempts + 1)
    return JOB_VERSION .. US .. '${FIELDS[0]!.code}' .. token .. US .. '${FIELDS[1]!.code}' .. attempts .. string.sub(body, claim.at)
  end
  claim.job.token, claim.job.attempts = token, claim.attempts + 1
  return jobBody(claim.job, body, claim.from, claim.to)
end

local function newJobBody(createdMs, tail)
  if string.sub(tail, 1, 1) ~= ',' then
    return JOB_VERSION .. ${luaString(NEW_JOB_PREFIX)} .. US .. '${CREATED_AT.code}' .. string.format('%.0f', createdMs) .. tail
  end
  local v1 = '{"g":0,"a":0,"c":' .. string.format('%.0f', createdMs) .. tail
  local job, from, to = jobHeaderV1(v1)
  if not job then return v1 end
  return jobBody(job, v1, from, to)
end

-- The claim token (nil for a body this version cannot read), attempts, maxAttempts and group.
-- The token, read on every acknowledgement and extension: one anchored match, in either format.
local function tokenOf(body) return string.match(body, JOB_TOKEN_PATTERN) or string.match(body, '^{"g":(%d+),') end
local function attemptsOf(body)
  local attempts = jobField(body, 'attempts')
  return attempts and tonumber(attempts) or nil
end
local function maxAttemptsOf(body)
  local maxAttempts = jobField(body, 'maxAttempts')
  return maxAttempts and tonumber(maxAttempts) or nil
end
local function groupOf(body) return jobField(body, 'group') or nil end
local function withAttempts(body, attempts) return withJobFields(body, { attempts = attempts }) end
-- errorJson: the failure as stored (job-codec.ts: encodeFailure), or 'null' for none.
local function withError(body, errorJson)
  if errorJson == 'null' then return withJobFields(body, { lastError = false }) end
  return withJobFields(body, { lastError = errorJson })
end
`,
};
