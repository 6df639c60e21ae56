import { JobScript } from './job-script.js';
import { LUA_REPEAT, REPEAT_KEYS } from './repeat-lua-snippets.js';

/**
 * What a re-recorded removal found: 'recorded' already (at that time or later), 'recordedAgain' (the
 * schedule is not stored), 'undone' (a restore from before the removal, deleted), 'superseded' (a
 * definition stored after the removal, kept).
 */
export type ReassertOutcome = 'recorded' | 'recordedAgain' | 'undone' | 'superseded';

const OUTCOMES: readonly ReassertOutcome[] = ['recorded', 'recordedAgain', 'undone', 'superseded'];

/**
 * Records again the recent removals an instance made whose records Redis lost with its data, so the
 * other instances that upserted those schedules do not restore them (see repeat-scheduler.ts).
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the repeat keys (see
 * repeat-lua-snippets.ts); one record per removal: schedule id, when this instance removed it
 * (server µs, as remove-repeat answered).
 *
 * Returns one status per record, decoded as a ReassertOutcome: 0 the removal is recorded (at that time or later: nothing to do),
 * 1 recorded again (the schedule is not stored; an older record is raised to this removal), 2 a
 * definition known only from before the removal was stored (a restore by an instance that had not
 * seen the removal): deleted with its waiting tick, and recorded again,
 * 3 a definition stored after the removal (a later `repeat()`), or one without a definition time:
 * kept, the removal is superseded. Run twice, the second run finds the removals recorded.
 */
export const reassertRemovalsScript = new JobScript(
  'reassertRemovals',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', ...REPEAT_KEYS],
    args: {},
    repeated: { name: 'removals', fields: ['id', 'removedAt'] },
    decode: (reply) => (reply as number[]).map((status) => OUTCOMES[Number(status)]),
  },
  `
local statuses = {}
for i = REMOVALS_FROM, #ARGV, REMOVALS_STRIDE do
  local id, removedAt = ARGV[i], tonumber(ARGV[i + 1])
  local status = 3
  local recorded = redis.call('zscore', REPEAT_REMOVED, id)
  if recorded and asUs(recorded) >= removedAt then
    status = 0
  elseif redis.call('hexists', REPEATS, id) == 0 then
    recordRemoval(id, removedAt)
    status = 1
  else
    local definedAt = redis.call('zscore', REPEAT_DEFINED, id)
    if definedAt and tonumber(definedAt) <= removedAt then
      deleteSchedule(id)
      recordRemoval(id, removedAt)
      status = 2
    end
  end
  statuses[#statuses + 1] = status
end
return statuses
`,
  [LUA_REPEAT],
);
