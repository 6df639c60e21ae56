import { RedisLockError } from './redis-lock.error.js';

/** A lock or topic name that cannot be used as (part of) a Redis key. Nothing was written. */
export class InvalidLockKeyError extends RedisLockError {
  readonly code = 'INVALID_LOCK_KEY';

  constructor(
    /** The name that was refused, as given. */
    readonly key: unknown,
    problem: string,
    what = 'lock key',
  ) {
    super(`Invalid ${what} ${preview(key)}: ${problem}.`);
  }
}

function preview(key: unknown): string {
  if (typeof key !== 'string') return `(${key === null ? 'null' : typeof key})`;
  return JSON.stringify(key.length > 80 ? `${key.slice(0, 80)}…` : key);
}
