import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Lua: one job and where it is, in one snapshot (`readJobState`), shared by read-job and watch-job.
 * Its callers declare the shard's completed zset and results hash as KEY.completed and KEY.results.
 *
 * Returns { nowMs, body|false, due score|false, visibility deadline|false, time of death|false,
 * finishedAt|false, result JSON|false, in its group's queue (0|1) }; the due score is also that of a
 * job waiting in its group's queue (see group-lua-snippet.ts), which reads 'waiting-group'.
 * finishedAt and the result are read only for a job in none of DUE, ACTIVE, DEAD and its group's
 * queue (a kept completed job; an id scheduled again is that new job).
 */
export const LUA_READ_JOB: LuaSnippet = {
  name: 'readJobState',
  requires: [LUA_TOPIC_PRELUDE],
  source: `
local function readJobState(id)
  local body, due, active, dead = redis.call('hget', JOBS, id), redis.call('zscore', DUE, id),
    redis.call('zscore', ACTIVE, id), redis.call('zscore', DEAD, id)
  local inGroupQueue = 0
  if body and not due then
    due = groupQueueScore(id, body) or false
    if due then inGroupQueue = 1 end
  end
  local finished, result = false, false
  if body and not (due or active or dead) then
    finished = redis.call('zscore', KEY.completed, id)
    if finished then result = redis.call('hget', KEY.results, id) end
  end
  return { nowMs, body, due, active, dead, finished, result, inGroupQueue }
end
`,
};

/** A job and where it is, as read-job answers it (raw: the inspector turns it into a `DelayedJob`). */
export interface JobRead {
  /** The server's now, in ms. */
  readonly nowMs: number;
  /** The stored body; null when there is no job of that id. */
  readonly body: string | null;
  /** Its due score (also that of a job waiting in its group's queue), a string: due scores have 16 digits. */
  readonly dueScore: string | null;
  /** The job waits in its group's queue for its group's turn (state 'waiting-group'). */
  readonly inGroupQueue: boolean;
  /** Its visibility deadline (ms) while claimed. */
  readonly visibleUntilMs: number | null;
  /** When it died (ms), for a dead letter. */
  readonly diedAtMs: number | null;
  /** When it completed (ms), for a kept completed job. */
  readonly finishedAtMs: number | null;
  /** The kept completed job's result, as JSON; null when it returned none. */
  readonly resultJson: string | null;
}

/** The reply of readJobState (read-job-lua-snippet.ts) as a JobRead. */
export function decodeJobRead(reply: unknown): JobRead {
  const [nowMs, body, dueScore, deadline, diedAt, finishedAt, result, inGroupQueue] = reply as (string | number | null)[];
  const msOrNull = (value: string | number | null | undefined) => (value == null ? null : Number(value));
  const textOrNull = (value: string | number | null | undefined) => (value == null ? null : String(value));
  return {
    nowMs: Number(nowMs),
    body: textOrNull(body),
    dueScore: textOrNull(dueScore),
    inGroupQueue: Number(inGroupQueue) === 1,
    visibleUntilMs: msOrNull(deadline),
    diedAtMs: msOrNull(diedAt),
    finishedAtMs: msOrNull(finishedAt),
    resultJson: textOrNull(result),
  };
}
