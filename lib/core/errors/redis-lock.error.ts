/**
 * Base class of every error this library throws. Catch it to handle all of them at once;
 * `code` is stable across versions and safe to switch on.
 */
export abstract class RedisLockError extends Error {
  /** Stable identifier of the error (`'LOCK_LOST'`, `'INVALID_JOB'`, …): switch on it rather than on the message. */
  abstract readonly code: string;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
