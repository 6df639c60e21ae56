import { RedisLockError } from './redis-lock.error.js';

/**
 * Redis could not be reached or refused the connection (down, wrong address, wrong password).
 * `cause` holds the client's own error.
 */
export class RedisConnectionError extends RedisLockError {
  readonly code = 'REDIS_CONNECTION';

  constructor(message: string, cause?: unknown) {
    super(message, { cause });
  }
}
