import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_REPEAT } from './repeat-lua-snippets.js';

/**
 * Records again the recent removals an instance made whose records Redis lost with its data, so the
 * other instances that upserted those schedules do not restore them (see repeat-scheduler.ts).
 *
 * KEYS  see repeat-lua-snippets.ts (KEYS[6] unused)
 * ARGV  pairs: schedule id, when this instance removed it (server µs, as remove-repeat answered)
 *
 * Returns one status per pair: 0 the removal is recorded (at that time or later: nothing to do),
 * 1 recorded again (the schedule is not stored; an older record is raised to this removal), 2 a definition known only from before the removal was stored (a restore
 * by an instance that had not seen the removal): deleted with its waiting tick, and recorded again,
 * 3 a definition stored after the removal (a later `repeat()`), or one without a definition time:
 * kept, the removal is superseded. Run twice, the second run finds the removals recorded.
 */
export const reassertRemovalsScript = new RedisScript(
  'reassertRemovals',
  `
local statuses = {}
for i = 1, #ARGV, 2 do
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
