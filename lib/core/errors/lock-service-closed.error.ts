import { RedisLockError } from './redis-lock.error.js';

/** The application is shutting down; locks can no longer be acquired through this module. */
export class LockServiceClosedError extends RedisLockError {
  readonly code = 'LOCK_SERVICE_CLOSED';

  constructor() {
    super('The lock service is shut down (the Nest application is closing); no new locks can be acquired.');
  }
}
