import { LockScope } from './lock-scope.js';

/** What code running under a lock can know about it. */
export interface LockContextSnapshot {
  readonly key: string;
  /** Pass it to the database so a stale holder's write is rejected (`... WHERE fence < :token`). */
  readonly fencingToken: string;
  /** Aborted with `LockLostError` when the lock is lost: stop the work. */
  readonly signal: AbortSignal;
}

/**
 * The lock the current call runs under, from AsyncLocalStorage: available anywhere inside a
 * `@WithLock` method or a `locks.using()` callback, however deep.
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
    const handle = LockScope.currentHandle();
    if (!handle) return undefined;
    return { key: handle.key, fencingToken: handle.fencingToken, signal: handle.signal };
  }
}
