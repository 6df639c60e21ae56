import { RedisLockError } from './redis-lock.error.js';

/**
 * `DelayQueueService.waitFor()` rejects with it when its `timeout` passed before the job finished.
 * Only the wait ended: the job is left as it is (it still runs, or waits, and may complete later).
 */
export class JobWaitTimeoutError extends RedisLockError {
  readonly code = 'JOB_WAIT_TIMEOUT';

  constructor(
    /** The job's topic. */
    readonly topic: string,
    /** The job's id. */
    readonly jobId: string,
    /** The timeout that passed, in ms. */
    readonly timeout: number,
  ) {
    super(
      `Job ${JSON.stringify(jobId)} of topic ${JSON.stringify(topic)} did not finish within ${timeout} ms. ` +
        'The job is left as it is; wait again, or read its state with get().',
    );
  }
}
