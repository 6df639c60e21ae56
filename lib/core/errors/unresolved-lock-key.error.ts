import { RedisLockError } from './redis-lock.error.js';

/**
 * A `@WithLock` / `@WithRequestLock` key could not be built for this call: a placeholder's value is
 * `undefined`, `null`, an empty string or an object, or the key function returned no usable key.
 * Nothing was locked and the method did not run.
 */
export class UnresolvedLockKeyError extends RedisLockError {
  readonly code = 'UNRESOLVED_LOCK_KEY';

  constructor(
    /** The template that failed, or `undefined` when the key came from a function. */
    readonly template: string | undefined,
    /** Where the key is declared, e.g. `@WithLock on OrdersService.pay()`. */
    readonly location: string,
    problem: string,
  ) {
    super(
      `Cannot build the lock key for ${location}: ${problem}. ` +
        'Nothing was locked and the method did not run; pass a value for every placeholder, or make the ' +
        'key function return a non-empty string (or array of strings).',
    );
  }
}
