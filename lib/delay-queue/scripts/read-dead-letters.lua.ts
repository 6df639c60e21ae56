import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Lists dead letters, newest first.
 *
 * KEYS  the five topic keys (see lua-snippets.ts)
 * ARGV[1] how many at most
 *
 * Returns { id, body, time of death ms, ... }.
 */
export const readDeadLettersScript = new RedisScript(
  'readDeadLetters',
  `
local rows = redis.call('zrevrange', DEAD, 0, tonumber(ARGV[1]) - 1, 'withscores')
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
