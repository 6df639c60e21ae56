import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { FIELD_START, HEADER_END, JOB_FIELDS, JOB_FORMAT_VERSION } from '../jobs/job-fields.js';

const luaString = (text: string): string => `'${[...text].map((ch) => (ch < ' ' ? `\\${ch.charCodeAt(0)}` : ch)).join('')}'`;

/** `{ g = 'token', a = 'attempts', ... }`: a stored code to its field's name, from the table. */
const NAME_OF_CODE = `{ ${JOB_FIELDS.map((field) => `${field.code} = '${field.name}'`).join(', ')} }`;

const CREATED_AT_CODE = JOB_FIELDS.find((field) => field.name === 'createdAt')!.code;

/** `job.token = job.token or '0'` for every field with a default, from the table. */
const FILL_DEFAULTS = JOB_FIELDS.filter((field) => 'default' in field)
  .map((field) => `  job.${field.name} = job.${field.name} or '${(field as { default: string }).default}'`)
  .join('\n');

/** The header's text in the table's order: each field present and not at its default. */
const WRITE_FIELDS = JOB_FIELDS.map((field) => {
  const skip = 'default' in field ? ` and v ~= '${(field as { default: string }).default}'` : '';
  return `  v = fieldText(job.${field.name})\n  if v${skip} then parts[#parts + 1] = US .. '${field.code}' .. v end`;
}).join('\n');

/**
 * Lua: the one reader and writer of a stored job's header, generated from the field table
 * (jobs/job-fields.ts) when this module loads. Every script that reads or changes a job's header
 * goes through these functions; none looks into the payload, which is copied as it is.
 *
 * jobHeader(body)        the header as a table by field name (`job.token`, `job.attempts`, ...: stored
 *                        text, defaults filled in), and the first and last index of the payload and
 *                        the last index of the header; nil for a body this version cannot read. Reads
 *                        format 2 and format 1 (release 0.1).
 * jobBody(job, body, from, to)  format 2: the header from `job`, then body's bytes from..to (its payload)
 * withJobFields(body, changes)  body with some fields replaced (false: removed); unchanged when unreadable
 * jobField(body, name)   one field's stored text (its default when absent), false when unreadable
 * newJobBody(createdMs, tail)   a fresh job from a tail (job-codec.ts: encodeBodyTail; a format-1
 *                        tail of an old outbox row or repeat schedule is converted)
 */
export const LUA_JOB_HEADER: LuaSnippet = {
  name: 'jobHeader',
  source: `
local JOB_VERSION, US, RS = ${luaString(JOB_FORMAT_VERSION)}, ${luaString(FIELD_START)}, ${luaString(HEADER_END)}
local JOB_VERSION_BYTE = string.byte(JOB_VERSION)
local JOB_NAME_OF_CODE = ${NAME_OF_CODE}
local JOB_FIELD_PATTERN = US .. '(.)([^' .. US .. RS .. ']*)'
local function fieldText(v)
  if type(v) == 'number' then return string.format('%.0f', v) end
  return v
end

local function fillDefaults(job)
${FILL_DEFAULTS}
  return job
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
  local stop = string.find(body, RS, 2, true)
  if not stop then return nil end
  local job, extra = {}, nil
  for code, value in string.gmatch(string.sub(body, 2, stop - 1), JOB_FIELD_PATTERN) do
    local name = JOB_NAME_OF_CODE[code]
    if name then
      job[name] = value
    else
      -- A field of a later format: kept as it is when this version rewrites the header.
      extra = (extra or '') .. US .. code .. value
    end
  end
  job.extra = extra
  return fillDefaults(job), stop + 1, #body, stop - 1
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

-- Reads the header alone (a short copy), never the payload: this runs for every job acknowledged.
local function jobField(body, name)
  if string.byte(body, 1) ~= JOB_VERSION_BYTE then
    local job = jobHeaderV1(body)
    if not job then return false end
    return fillDefaults(job)[name]
  end
  local stop = string.find(body, RS, 2, true)
  if not stop then return false end
  local header = string.sub(body, 1, stop)
  local job = {}
  for code, value in string.gmatch(header, JOB_FIELD_PATTERN) do
    if JOB_NAME_OF_CODE[code] == name then
      job[name] = value
      break
    end
  end
  return fillDefaults(job)[name]
end

local function newJobBody(createdMs, tail)
  if string.sub(tail, 1, 1) ~= ',' then return JOB_VERSION .. US .. '${CREATED_AT_CODE}' .. string.format('%.0f', createdMs) .. tail end
  local v1 = '{"g":0,"a":0,"c":' .. string.format('%.0f', createdMs) .. tail
  local job, from, to = jobHeaderV1(v1)
  if not job then return v1 end
  return jobBody(fillDefaults(job), v1, from, to)
end

-- The claim token (nil for a body this version cannot read), attempts, maxAttempts and group.
local function tokenOf(body) return jobField(body, 'token') or nil end
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
