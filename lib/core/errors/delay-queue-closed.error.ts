import { RedisLockError } from './redis-lock.error.js';

/** The application has shut down: jobs can no longer be scheduled or consumed through this module. */
export class DelayQueueClosedError extends RedisLockError {
  readonly code = 'DELAY_QUEUE_CLOSED';

  constructor(action: string) {
    super(
      `Cannot ${action}: the delay queue is shut down (the Nest application has closed). ` +
        'Schedule jobs before app.close() resolves, or from a running application.',
    );
  }
}
