import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_REPEAT } from './repeat-lua-snippets.js';
import { LUA_WRITE_DEADLINE } from './write-deadline-lua-snippet.js';

/**
 * Deletes a repeatable schedule (`removeRepeat()`) and its tick job if it still waits, and records
 * the removal (also of a schedule not stored: one lost with the data stays removed); a tick already
 * running finishes, and its advance finds no schedule and enqueues nothing.
 *
 * KEYS  see repeat-lua-snippets.ts; KEYS[6] the call's operation record
 * ARGV[1] schedule id, ARGV[2] (optional, an outbox row's application, see jobs/write-fence.ts)
 *         the write's deadline on this server's clock; KEYS[6] is then the row's record
 *
 * Returns { status, removedAt }: status 1 if the schedule existed, 0 if not, -3 the deadline has
 * passed (nothing changes, nothing recorded); removedAt the server µs of the removal (-1: unknown, a
 * record an older version wrote). A second run of the same call answers as the first (its record
 * holds both).
 */
export const removeRepeatScript = new RedisScript(
  'removeRepeat',
  `
local prior = recordedReply()
if prior then
  local status, removedAt = string.match(prior, '^(%-?%d+):(%d+)$')
  if status then return { tonumber(status), tonumber(removedAt) } end
  return { tonumber(prior), -1 }
end
if pastDeadline(ARGV[2]) then return { -3, -1 } end
local id = ARGV[1]
local existed = deleteSchedule(id)
recordRemoval(id, nowUs)
recordReply(existed .. ':' .. fmt(nowUs))
return { existed, nowUs }
`,
  [LUA_REPEAT, LUA_WRITE_DEADLINE],
);
