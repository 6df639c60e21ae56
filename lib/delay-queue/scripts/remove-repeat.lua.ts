import { JobScript } from './job-script.js';
import { LUA_REPEAT, REPEAT_KEYS } from './repeat-lua-snippets.js';
import { LUA_WRITE_DEADLINE } from './write-deadline-lua-snippet.js';

/**
 * What a removal did: removed a stored schedule, found none (the removal is recorded either way), or
 * came past its write deadline (nothing changed); `removedAt`: the server µs of the removal, unknown
 * for a replay of an older version's call.
 */
export interface RemoveOutcome {
  readonly status: 'removed' | 'absent' | 'fence-expired';
  readonly removedAt?: number;
}

/**
 * Deletes a repeatable schedule (`removeRepeat()`) and its tick job if it still waits, and records
 * the removal (also of a schedule not stored: one lost with the data stays removed); a tick already
 * running finishes, and its advance finds no schedule and enqueues nothing.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the call's operation record
 * (topic-base-lua-snippet.ts reads it as KEYS[6]; an outbox row's record for an outbox row's
 * application) and the repeat keys (see repeat-lua-snippets.ts); the schedule id, and the write's
 * deadline on this server's clock for an outbox row's application ('' for none; see jobs/write-fence.ts).
 *
 * Returns { status, removedAt }: status 1 if the schedule existed, 0 if not, -3 the deadline has
 * passed (nothing changes, nothing recorded); removedAt the server µs of the removal (-1: unknown, a
 * record an older version wrote); decoded into a RemoveOutcome. A second run of the same call answers
 * as the first (its record holds both).
 */
export const removeRepeatScript = new JobScript(
  'removeRepeat',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record', ...REPEAT_KEYS],
    args: { scheduleId: 'text', deadline: 'text' },
    decode: (reply): RemoveOutcome => {
      const [status, removedAt] = (reply as number[]).map(Number);
      if (status === -3) return { status: 'fence-expired' };
      return { status: status === 1 ? 'removed' : 'absent', ...(removedAt >= 0 ? { removedAt } : {}) };
    },
  },
  `
local prior = recordedReply()
if prior then
  local status, removedAt = string.match(prior, '^(%-?%d+):(%d+)$')
  if status then return { tonumber(status), tonumber(removedAt) } end
  return { tonumber(prior), -1 }
end
if pastDeadline(ARG.deadline) then return { -3, -1 } end
local id = ARG.scheduleId
local existed = deleteSchedule(id)
recordRemoval(id, nowUs)
recordReply(existed .. ':' .. fmt(nowUs))
return { existed, nowUs }
`,
  [LUA_REPEAT, LUA_WRITE_DEADLINE],
);
