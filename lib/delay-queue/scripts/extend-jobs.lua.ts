import { claimOutcome, JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Pushes back the visibility deadline of jobs still running, like a lock lease renewal. A claim no
 * longer held is looked up in the cancel tombstones (see cancel-job), so that a consumer that
 * missed the cancel notice still learns that its job was cancelled; claims still held cost nothing more.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the shard's cancel tombstones;
 * the visibility timeout, then one record per claim: id, claim token
 *
 * A claim no longer held whose group's turn is held for it (cancelled or replaced while it ran, see
 * group-lua-snippet.ts) gets that turn's deadline pushed back instead: its consumer extends it while
 * the given-up handler still runs, so the group's next job waits for that handler to return.
 *
 * Returns one flag per job: 1 extended, 2 cancelled while it ran, 0 no longer claimed under that
 * token for another reason (replaced, or expired and possibly re-delivered elsewhere); decoded as
 * 'extended' | 'cancelled' | 'lost'. Running it
 * twice extends twice, from the later TIME: the same claims, a deadline no earlier.
 */
export const extendJobsScript = new JobScript(
  'extendJobs',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'cancelled'],
    args: { visibilityMs: 'int' },
    repeated: { name: 'claims', fields: ['id', 'token'] },
    decode: (reply) => (reply as number[]).map(claimOutcome),
  },
  `
local TOMBSTONES = KEY.cancelled
local deadline = nowMs + ARG.visibilityMs
local result = {}
for i = CLAIMS_FROM, #ARGV, CLAIMS_STRIDE do
  local id = ARGV[i]
  local token = ARGV[i + 1]
  if ownedBody(id, token) then
    redis.call('zadd', ACTIVE, 'xx', deadline, id)
    result[#result + 1] = 1
  else
    extendHeldTurn(token, deadline)
    if redis.call('zscore', TOMBSTONES, token .. ':' .. id) then
      result[#result + 1] = 2
    else
      result[#result + 1] = 0
    end
  end
end
return result
`,
  [LUA_TOPIC_PRELUDE],
);
