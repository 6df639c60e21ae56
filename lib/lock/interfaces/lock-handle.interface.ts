/**
 * A held lock. Release it with `release()`, or let `await using` do it:
 *
 * @example
 * await using lock = await locks.acquire(`order:${id}`);
 * await db.update(order, { where: { fence: LessThan(lock.fencingToken) } });
 */
export interface LockHandle extends AsyncDisposable {
  /** The lock's name as given to `acquire` (names joined by `,` for a multi-key lock). */
  readonly key: string;
  /**
   * Decimal string of a per-key counter that only grows: every fresh acquire gets a larger one.
   * Hand it to the store you write to so it can reject a holder whose lease was lost (`fence < token`).
   * For a multi-key lock: the tokens of each key in acquisition order, joined by `,`.
   */
  readonly fencingToken: string;
  /** Aborted, with a `LockLostError` as reason, when the lease is lost. */
  readonly signal: AbortSignal;
  /** True until released or lost. */
  readonly held: boolean;
  /** Releases this hold (one level of re-entry). Idempotent; does not throw if the lock was already lost. */
  release(): Promise<void>;
  /** Sets a new lease (default: the lease it was taken with). Throws `LockNotHeldError` if no longer held. */
  extend(leaseTime?: number): Promise<void>;
}
