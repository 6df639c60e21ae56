import type { LockHandle } from './interfaces/lock-handle.interface.js';

/** How a multi-key acquire takes one of its keys. */
interface MultiKeyAcquireSteps<K> {
  /**
   * Takes the lock of `key` within `remainingWait` ms (what is left of the whole acquire's wait;
   * `undefined` when the caller set none); resolves `null` when it was not free in time.
   */
  acquireOne(key: K, remainingWait: number | undefined): Promise<LockHandle | null>;
  /** Lets go at once of parts taken but never handed to the caller. */
  releaseUnused(parts: readonly LockHandle[]): Promise<void>;
}

/**
 * The lock names of a key as they are taken: one name, or several without repeats in sorted order,
 * so that `['a','b']` and `['b','a']` take the same locks in the same order and cannot deadlock.
 */
export function lockNamesOf(key: string | readonly string[]): string[] {
  return typeof key === 'string' ? [key] : [...new Set(key)].sort();
}

/**
 * All or nothing: takes `keys` one after the other in the given order (`lockNamesOf`'s order, so
 * two acquires of the same keys cannot deadlock), all within one `waitTimeout`. When one part is not
 * free in time or its acquire throws, the parts already taken are released and the acquire
 * resolves `null` or rethrows that error untouched.
 *
 * @returns every part, in the order of `keys`, or `null`
 */
export async function acquireAllOrNothing<K>(
  keys: readonly K[],
  waitTimeout: number | undefined,
  steps: MultiKeyAcquireSteps<K>,
): Promise<LockHandle[] | null> {
  const started = performance.now();
  const parts: LockHandle[] = [];
  try {
    for (const key of keys) {
      const remaining = waitTimeout === undefined ? undefined : Math.max(0, waitTimeout - (performance.now() - started));
      const part = await steps.acquireOne(key, remaining);
      if (!part) break;
      parts.push(part);
    }
  } catch (error) {
    await steps.releaseUnused(parts);
    throw error;
  }
  if (parts.length < keys.length) {
    await steps.releaseUnused(parts);
    return null;
  }
  return parts;
}
