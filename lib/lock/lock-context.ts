import { HeldLockFrames } from './held-lock-frames.js';

/**
 * What code running under a lock can know about it.
 */
export interface LockContextSnapshot {
  /** The lock's name as given (names joined by `,` for a multi-key lock). */
  readonly key: string;
  /**
   * Pass it to the database so a stale holder's write is rejected (`... WHERE fence < :token`).
   * Under a multi-key lock: the greatest of its keys' tokens (see `fencingTokens`).
   */
  readonly fencingToken: string;
  /** The token of each lock name held, by name: under `['acct:1', 'acct:2']`, fence each account with its own. */
  readonly fencingTokens: Readonly<Record<string, string>>;
  /** Aborted with `LockLostError` when the lock is lost: stop the work. */
  readonly signal: AbortSignal;
}

/**
 * The lock the current call runs under, from AsyncLocalStorage: available anywhere inside a
 * `@WithLock` method or a `locks.using()` callback, however deep. It only reads the innermost frame
 * of the internal `HeldLockFrames` registry; taking the locks is `LockService`'s and the decorators' job.
 *
 * @example
 * \@WithLock('order:<0>')
 * async pay(orderId: string) {
 *   const { fencingToken, signal } = LockContext.current()!;
 *   await this.orders.markPaid(orderId, fencingToken, { signal });
 * }
 */
export class LockContext {
  /** The innermost lock section, or `undefined` outside any. */
  static current(): LockContextSnapshot | undefined {
    const handle = HeldLockFrames.currentHandle();
    if (!handle) return undefined;
    return { key: handle.key, fencingToken: handle.fencingToken, fencingTokens: handle.fencingTokens, signal: handle.signal };
  }
}
