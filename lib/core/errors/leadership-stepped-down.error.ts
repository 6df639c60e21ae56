import { RedisLockError } from './redis-lock.error.js';

/**
 * The reason of a leader lock's `signal` when this instance handed leadership back itself: the
 * application is shutting down, or the provider called `lock.release()`. (A lease that was lost
 * aborts it with `LockLostError` instead.)
 */
export class LeadershipSteppedDownError extends RedisLockError {
  readonly code = 'LEADERSHIP_STEPPED_DOWN';

  constructor(
    /** The `@LeaderElection` key. */
    readonly key: string,
    /** The fencing token of the term that ended. */
    readonly fencingToken: string,
  ) {
    super(
      `Leadership of ${JSON.stringify(key)} (fencing token ${fencingToken}) was handed back by this instance ` +
        '(application shutdown or lock.release()). Stop the work the leader was doing; another instance takes over.',
    );
  }
}
