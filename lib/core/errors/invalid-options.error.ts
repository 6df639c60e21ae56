import { RedisLockError } from './redis-lock.error.js';

/**
 * An option has a value the library cannot use, or the application is put together in a way it cannot
 * run: a decorator that can never work, two handlers for one topic, a module that cannot see
 * `RedisLockModule`. These are mistakes to fix in the code, found at bootstrap (or at the first call).
 * The message names the option and what is accepted; `code` is `'INVALID_OPTIONS'`, or a code of its
 * own for the refusals listed in the API reference of `code`.
 */
export class InvalidOptionsError extends RedisLockError {
  /**
   * `'INVALID_OPTIONS'`; otherwise one of `'INVALID_LOCK_KEY_TEMPLATE'`, `'DUPLICATE_DELAYED_HANDLER'`,
   * `'DELAY_QUEUE_ALREADY_STARTED'`, `'REDIS_LOCK_MODULE_NOT_VISIBLE'`, `'UNSUPPORTED_IN_REDLOCK_MODE'`,
   * `'LOCK_SERVICE_UNAVAILABLE'` (see the message for what to change).
   */
  readonly code: string = 'INVALID_OPTIONS';

  constructor(
    /** The option (or decorator, or module) the problem is in, e.g. `lock.leaseTime`, `@WithLock on OrdersService.pay()`. */
    readonly option: string,
    problem: string,
    /** The whole message, for a refusal that reads better in a sentence of its own. */
    message = `Invalid option \`${option}\`: ${problem}.`,
  ) {
    super(message);
  }
}
