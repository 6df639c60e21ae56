import { RedisLockError } from './redis-lock.error.js';

/**
 * `DelayQueueService.waitFor()` rejects with it when the job went to the dead letters after its last
 * attempt (or was refused a retry): `lastError` is the handler's last failure, as `get()` shows it.
 * `DelayQueueService.retryDead(topic, id)` puts it back; a new `waitFor()` then waits for that run.
 *
 * @example
 * try {
 *   await delayQueue.waitFor('invoice.send', id, { timeout: 30_000 });
 * } catch (error) {
 *   if (error instanceof JobDeadError) console.warn(`invoice failed: ${error.lastError}`);
 * }
 */
export class JobDeadError extends RedisLockError {
  readonly code = 'JOB_DEAD';

  constructor(
    /** The job's topic. */
    readonly topic: string,
    /** The job's id. */
    readonly jobId: string,
    /** The message of the handler's last failure, when it left one. */
    readonly lastError: string | undefined,
    /** Its stack, when it had one. */
    readonly lastErrorStack?: string,
  ) {
    super(
      `Job ${JSON.stringify(jobId)} of topic ${JSON.stringify(topic)} went to the dead letters` +
        `${lastError === undefined ? '' : `: ${lastError}`}. See deadLetters(); retryDead() runs it again.`,
    );
  }
}
