import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import type { LockAcquireTimeoutError } from '../core/errors/lock-acquire-timeout.error.js';
import { OPTION_BOUNDS } from '../core/options/option-bounds.js';
import { OptionValidator } from '../core/options/option-validation.js';
import { keysOf, refuseUnknownKeys } from '../core/options/known-option-keys.js';
import type { AcquireOptions } from '../lock/interfaces/acquire-options.interface.js';

/**
 * Which lock a `@WithLock` / `@WithRequestLock` section takes.
 *
 * @useDeclaredType
 */
export type WithLockMode = 'exclusive' | 'read' | 'write';

/** What the caller sees when the lock could not be taken in time. */
export interface LockUnavailableContext {
  /** The key (or keys) that could not be locked. */
  readonly key: string | readonly string[];
  /** The call's arguments (for `@WithRequestLock`: the handler's raw arguments, e.g. `[req, res, next]`). */
  readonly args: readonly unknown[];
  /** What `onLocked: 'throw'` would have thrown. */
  readonly error: LockAcquireTimeoutError;
}

/**
 * When the lock is still held by someone else after `waitTimeout`:
 * - `'throw'` (default): reject with `LockAcquireTimeoutError` (HTTP: 409 Conflict);
 * - `'skip'`: do not run the method, resolve `undefined`;
 * - a function: do not run the method, resolve what the function returns (or reject with what it throws).
 *
 * @inline
 */
export type OnLocked = 'throw' | 'skip' | ((context: LockUnavailableContext) => unknown);

/** Options of `@WithLock` and `@WithRequestLock`. Unset values fall back to the module's `lock` defaults. */
export interface WithLockOptions {
  /** Longest wait for the lock in ms; `0` tries once and never waits. */
  waitTimeout?: number;
  /** Fixed lease in ms (no watchdog). Omit it to have the lease renewed while the method runs. */
  leaseTime?: number;
  /** FIFO hand-off between waiters (exclusive mode only). */
  fair?: boolean;
  /**
   * `'exclusive'` (default): a mutex. `'read'` / `'write'`: the two sides of `locks.readWrite(key)`,
   * many readers at once or one writer.
   */
  mode?: WithLockMode;
  /** What happens when the lock cannot be taken in time. Default `'throw'`. */
  onLocked?: OnLocked;
}

/** `WithLockOptions` after validation and defaults. Internal. */
export interface ResolvedWithLockOptions {
  /** `acquire.keyPattern` is the decorator's key template (the metric label and span attribute). */
  readonly acquire: AcquireOptions;
  readonly mode: WithLockMode;
  readonly onLocked: OnLocked;
  /** Where the decorator sits (`@WithLock on Class.method()`), for messages and spans. */
  readonly location: string;
}

const WITH_LOCK_OPTION_KEYS = keysOf<WithLockOptions>()(['waitTimeout', 'leaseTime', 'fair', 'mode', 'onLocked']);

/**
 * Validates decorator options when the decorator is applied; a bad value names the method.
 * `keyPattern` names the section's locks in metrics and traces (see `keyPatternOf`).
 */
export function resolveWithLockOptions(
  options: WithLockOptions | undefined,
  location: string,
  keyPattern?: string,
): ResolvedWithLockOptions {
  const o = options ?? {};
  const invalid = (option: string, problem: string) => new InvalidOptionsError(option, `${problem} (in ${location})`);
  if (typeof o !== 'object' || o === null) throw invalid('options', 'expected an object');
  // The same ranges as the module's `lock` defaults and per-call acquire options.
  const validate = new OptionValidator((option, problem) => {
    throw invalid(option, problem);
  });
  refuseUnknownKeys(validate.refuse, '', o, WITH_LOCK_OPTION_KEYS);
  const durationOf = (name: 'waitTimeout' | 'leaseTime') =>
    o[name] === undefined ? undefined : validate.duration(name, o[name], OPTION_BOUNDS[name]);
  const waitTimeout = durationOf('waitTimeout');
  const leaseTime = durationOf('leaseTime');
  if (o.fair !== undefined) validate.flag('fair', o.fair);
  const mode = o.mode ?? 'exclusive';
  if (mode !== 'exclusive' && mode !== 'read' && mode !== 'write') {
    throw invalid('mode', `got ${JSON.stringify(mode)}; use 'exclusive', 'read' or 'write'`);
  }
  if (o.fair && mode !== 'exclusive') throw invalid('fair', `fair hand-off applies to exclusive locks, not mode '${mode}'`);
  const onLocked = o.onLocked ?? 'throw';
  if (onLocked !== 'throw' && onLocked !== 'skip' && typeof onLocked !== 'function') {
    throw invalid('onLocked', `got ${JSON.stringify(onLocked)}; use 'throw', 'skip' or a function`);
  }
  const acquire: AcquireOptions = {};
  if (waitTimeout !== undefined) acquire.waitTimeout = waitTimeout;
  if (leaseTime !== undefined) acquire.leaseTime = leaseTime;
  if (o.fair !== undefined) acquire.fair = o.fair;
  if (keyPattern !== undefined) acquire.keyPattern = keyPattern;
  return { acquire, mode, onLocked, location };
}

/**
 * A decorator's key source as a low-cardinality name: the template itself (`'order:<0>'`), templates
 * joined by ` + ` for a multi-key lock, and the method's name for a key function (whose keys could be anything).
 */
export function keyPatternOf(source: unknown, methodName: string): string {
  if (typeof source === 'string') return source;
  if (Array.isArray(source) && source.every((part) => typeof part === 'string')) return source.join(' + ');
  return methodName;
}
