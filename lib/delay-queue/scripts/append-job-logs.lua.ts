import { claimOutcome, JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Appends one batch of a running job's log lines (`JobContext.log`: the lines one delivery logged in
 * one turn of the event loop) to the job's log list (`<shard>:logs:<id>`, see topic-base-lua-snippet.ts),
 * keeping its last `maxLines`, if the job is still claimed under the given token: a delivery that
 * lost its job (cancelled, replaced, visibility passed and claimed again) writes nothing.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the delivery's log record (the
 * sequence number of the last batch it appended, kept OPERATION_TTL_MS: `<shard>:op:<token>:log`) and
 * the shard's cancel tombstones; the job's id and claim token, the batch's sequence number (1, 2, ...
 * per delivery) and the bound; then the lines, one ARGV each.
 *
 * Returns 1 appended (or appended before: a second run of the same batch, whose sequence number the
 * record holds, appends nothing), 2 the job was cancelled while this delivery ran, 0 the job is not
 * claimed under that token for another reason (decoded as set-progress's 'held' | 'cancelled' | 'lost').
 */
export const appendJobLogsScript = new JobScript(
  'appendJobLogs',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record', 'cancelled'],
    args: { id: 'text', token: 'text', sequence: 'int', maxLines: 'int' },
    repeated: { name: 'lines', fields: ['line'] },
    decode: claimOutcome,
  },
  `
local id = ARG.id
if not ownedBody(id, ARG.token) then
  if redis.call('zscore', KEY.cancelled, ARG.token .. ':' .. id) then return 2 end
  return 0
end
if tonumber(redis.call('get', KEY.record) or '0') >= ARG.sequence then return 1 end
local key = logsKey(id)
redis.call('rpush', key, unpack(ARGV, LINES_FROM, #ARGV))
redis.call('ltrim', key, -ARG.maxLines, -1)
redis.call('set', KEY.record, ARG.sequence, 'px', OPERATION_TTL_MS)
return 1
`,
  [LUA_TOPIC_PRELUDE],
);
