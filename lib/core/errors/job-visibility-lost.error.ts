import { RedisLockError } from './redis-lock.error.js';

/**
 * Set as `job.signal.reason` when a running job stops belonging to its handler: it was replaced, or
 * its visibility deadline passed (Redis unreachable, or the process stalled) so that another consumer
 * may run it again. The handler should stop; its result will not be acknowledged. A cancelled job
 * aborts with `JobCancelledError` instead.
 */
export class JobVisibilityLostError extends RedisLockError {
  readonly code = 'JOB_VISIBILITY_LOST';

  constructor(
    /** The job's topic. */
    readonly topic: string,
    /** The job's id. */
    readonly jobId: string,
    /**
     * `'not-owner'`: the job was cancelled, replaced or claimed again; `'unconfirmed'`: Redis could not confirm the
     * visibility deadline was extended before it passed.
     */
    readonly reason: 'not-owner' | 'unconfirmed',
  ) {
    super(
      `Job ${JSON.stringify(jobId)} of topic ${JSON.stringify(topic)} is no longer held by this consumer: ` +
        (reason === 'not-owner'
          ? 'it was cancelled, replaced, or handed to another consumer after its visibility deadline passed'
          : 'Redis could not confirm an extension of its visibility before the deadline') +
        '. Stop the work; make the handler idempotent (use job.id) since the job may run again elsewhere.',
    );
  }
}
