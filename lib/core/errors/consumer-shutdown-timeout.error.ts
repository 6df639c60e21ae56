import { RedisLockError } from './redis-lock.error.js';

/**
 * Set as `job.signal.reason` when the application shuts down and a handler is still running after
 * `shutdownTimeout`. The job has been handed back to the queue and will run again on another consumer;
 * stop the work, or raise `delayQueue.shutdownTimeout` if handlers need longer to finish.
 */
export class ConsumerShutdownTimeoutError extends RedisLockError {
  readonly code = 'CONSUMER_SHUTDOWN_TIMEOUT';

  constructor(
    /** The job's topic. */
    readonly topic: string,
    /** The job's id. */
    readonly jobId: string,
    /** The `delayQueue.shutdownTimeout` that ran out, in ms. */
    readonly shutdownTimeout: number,
  ) {
    super(
      `Job ${JSON.stringify(jobId)} of topic ${JSON.stringify(topic)} was still running ${shutdownTimeout} ms after ` +
        'shutdown began; it was handed back to the queue. Stop the work, or raise delayQueue.shutdownTimeout.',
    );
  }
}
