import { RedisLockError } from './redis-lock.error.js';

/**
 * `DelayQueueService.waitFor()` rejects with it when Redis holds no job of that id: it was never
 * scheduled (or not yet: a job scheduled inside a transaction is written after the commit), it was
 * cancelled before the wait began, or it completed and its consumer does not keep completed jobs
 * (`keepCompleted`), so its outcome is gone. A waiter that was already waiting when the job
 * completed gets the outcome from the notice instead.
 */
export class JobNotFoundError extends RedisLockError {
  readonly code = 'JOB_NOT_FOUND';

  constructor(
    /** The job's topic. */
    readonly topic: string,
    /** The id that was not found. */
    readonly jobId: string,
  ) {
    super(
      `No job ${JSON.stringify(jobId)} in topic ${JSON.stringify(topic)}: it was never scheduled (or its write after a ` +
        'transaction has not landed yet), was removed, or finished without keepCompleted so its outcome is not kept. ' +
        'Wait from the moment schedule() resolved, or set keepCompleted on the consumer.',
    );
  }
}
