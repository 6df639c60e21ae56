import { RedisScript } from '../../../redis/redis-script.js';

/**
 * Cancels one job that is still waiting (scheduled or due, not yet claimed). Unlike
 * `DelayQueueService.cancel`, a job a consumer is running is left alone: an operator clicking on a
 * list a few seconds old must not pull a job out from under its handler.
 *
 * KEYS[1] due     `<prefix>:dq:{topic}:due`     zset id -> due score
 * KEYS[2] jobs    `<prefix>:dq:{topic}:jobs`    hash id -> body
 * KEYS[3] active  `<prefix>:dq:{topic}:active`  zset id -> visibility deadline
 * ARGV[1] job id
 *
 * Returns 1 when cancelled, -1 when the job is running, 0 when it is not waiting (done, dead or unknown).
 */
export const cancelWaitingJobScript = new RedisScript(
  'dashboardCancelWaitingJob',
  `
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  redis.call('hdel', KEYS[2], ARGV[1])
  return 1
end
if redis.call('zscore', KEYS[3], ARGV[1]) then return -1 end
return 0
`,
);
