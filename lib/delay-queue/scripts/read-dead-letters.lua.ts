import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/** A dead letter as read-dead-letters answers it: its id, stored body and time of death (ms). */
export interface DeadLetterRead {
  readonly id: string;
  readonly body: string;
  readonly diedAtMs: number;
}

/**
 * Lists dead letters, newest first. Read-only.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys; how many at most.
 *
 * Returns { id, body, time of death ms, ... }, decoded into DeadLetterRead rows.
 */
export const readDeadLettersScript = new JobScript(
  'readDeadLetters',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker'],
    args: { limit: 'int' },
    decode: decodeDeadLetters,
  },
  `
local rows = redis.call('zrevrange', DEAD, 0, ARG.limit - 1, 'withscores')
local result = {}
for i = 1, #rows, 2 do
  local body = redis.call('hget', JOBS, rows[i])
  if body then
    result[#result + 1] = rows[i]
    result[#result + 1] = body
    result[#result + 1] = tonumber(rows[i + 1])
  end
end
return result
`,
  [LUA_TOPIC_PRELUDE],
);

function decodeDeadLetters(reply: unknown): DeadLetterRead[] {
  const flat = reply as (string | number)[];
  const rows: DeadLetterRead[] = [];
  for (let i = 0; i < flat.length; i += 3) rows.push({ id: String(flat[i]), body: String(flat[i + 1]), diedAtMs: Number(flat[i + 2]) });
  return rows;
}
