import { RedisLockError } from '../core/errors/redis-lock.error.js';
import { errorMessage } from '../core/errors/error-message.js';

/**
 * `closeRedisLockTestingModule(…, { removeKeys: true })` or `removeRedisLockKeys()` could not
 * delete the module's keys, most often because its Redis was already stopped. The module itself
 * is closed. `cause` holds the Redis client's error.
 *
 * @example
 * await redis.stop();                                   // the test stopped Redis on purpose
 * await closeRedisLockTestingModule(moduleRef);         // so do not ask for removeKeys here
 */
export class TestKeysNotRemovedError extends RedisLockError {
  readonly code = 'TEST_KEYS_NOT_REMOVED';

  constructor(
    /** The testing module's key prefix whose keys are left in Redis. */
    readonly keyPrefix: string,
    cause: unknown,
  ) {
    const reason = errorMessage(cause);
    super(
      `Could not remove the keys under prefix "${keyPrefix}": ${reason}. ` +
        'Is the Redis server still running? A test that stops Redis should close its module without { removeKeys: true }.',
      { cause },
    );
  }
}
