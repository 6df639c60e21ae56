import { RedisLockError } from './redis-lock.error.js';

/** An option has a value the library cannot use. The message names the option and what is accepted. */
export class InvalidOptionsError extends RedisLockError {
  readonly code = 'INVALID_OPTIONS';

  constructor(
    /** The option (or decorator) the problem is in, e.g. `lock.leaseTime`, `@WithLock`. */
    readonly option: string,
    problem: string,
  ) {
    super(`Invalid option \`${option}\`: ${problem}.`);
  }
}
