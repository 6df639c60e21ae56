import { RedisLockError } from './redis-lock.error.js';

/**
 * Redis answered a command of this library with an error (out of memory, read-only replica, missing
 * ACL permission, persistence failure…). Nothing was changed by that command. `cause` holds the reply.
 */
export class RedisCommandError extends RedisLockError {
  readonly code = 'REDIS_COMMAND';

  constructor(message: string, cause: unknown) {
    super(message, { cause });
  }
}
