import { RedisLockError } from './redis-lock.error.js';

/**
 * A job given to `DelayQueueService.schedule()` / `scheduleMany()` cannot be stored as given: a
 * payload JSON would change or cannot encode, a delay or time that is not a finite non-negative
 * number, an empty or oversized id. Thrown before anything is written; the message names the field.
 */
export class InvalidJobError extends RedisLockError {
  readonly code = 'INVALID_JOB';

  constructor(
    /** The topic the job was scheduled on. */
    readonly topic: string,
    /** Where the problem is, e.g. `payload.user.createdAt`, `jobs[3].delay`, `id`. */
    readonly field: string,
    /** What is wrong with it, e.g. `is not JSON data: a function`. */
    readonly problem: string,
  ) {
    super(`Invalid job for topic ${JSON.stringify(topic)}: \`${field}\` ${problem}. Nothing was scheduled.`);
  }
}
