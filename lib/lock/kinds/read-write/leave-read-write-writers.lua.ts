import { RedisScript } from '../../../core/redis/redis-script.js';
import { WAKE_ALL } from '../../protocols/lua-snippets.js';

/**
 * A writer that gave up waiting leaves the waiting writers of a read/write lock (layout:
 * read-write-lua-snippets.ts); when it was the last one, every parked reader is woken (they were
 * held back only by it).
 *
 * KEYS[1] waiting writers, KEYS[2] wake channel
 * ARGV[1] owner, ARGV[2] publish command
 *
 * Returns 0 (also when the writer was not waiting: leaving twice changes nothing).
 */
export const leaveReadWriteWritersScript = new RedisScript(
  'leaveReadWriteWriters',
  `
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 and redis.call('zcard', KEYS[1]) == 0 then
  redis.call(ARGV[2], KEYS[2], '${WAKE_ALL}')
end
return 0
`,
);
