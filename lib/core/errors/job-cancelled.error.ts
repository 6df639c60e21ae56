import { RedisLockError } from './redis-lock.error.js';

/**
 * Set as `job.signal.reason` when `DelayQueueService.cancel(topic, id)` deleted the job its handler is
 * running, from whichever instance. The job is gone: whatever the handler does next (returns or
 * throws), it is not retried, not dead-lettered, and its result is not kept. Stop the work.
 * See docs/delayed-jobs.md (Cancelling a running job). `DelayQueueService.waitFor()` rejects with it
 * (`whileWaited` true) when the job it waits for is cancelled, whether it was running or waiting.
 *
 * @example
 * if (job.signal.reason instanceof JobCancelledError) return; // cancelled on purpose, not a failure
 */
export class JobCancelledError extends RedisLockError {
  readonly code = 'JOB_CANCELLED';

  constructor(
    /** The job's topic. */
    readonly topic: string,
    /** The job's id. */
    readonly jobId: string,
    /** True when a `waitFor()` caller learned of it, rather than the handler running the job. */
    readonly whileWaited = false,
  ) {
    super(
      whileWaited
        ? `Job ${JSON.stringify(jobId)} of topic ${JSON.stringify(topic)} was cancelled while waited for: it will not complete.`
        : `Job ${JSON.stringify(jobId)} of topic ${JSON.stringify(topic)} was cancelled while it ran: stop the work. ` +
            'It will not be retried and its outcome is not recorded.',
    );
  }
}
