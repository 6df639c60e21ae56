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
   * Decimal string of a per-key counter that only grows: every fresh acquire gets a larger one; it
   * fits a signed 64-bit (`bigint`) column. Hand it to the store you write to so it can reject a
   * holder whose lease was lost (`fence < token`).
   * For a multi-key lock: the greatest of its keys' tokens (see `fencingTokens`). It orders holds of
   * that same set of keys; to fence a resource guarded by one of the keys, use that key's token.
   */
  readonly fencingToken: string;
  /**
   * The fencing token of each lock name held (one entry for a single key), by name: fence each
   * resource with the token of the key that guards it (`lock.fencingTokens['acct:1']`).
   */
  readonly fencingTokens: Readonly<Record<string, string>>;
  /**
   * Aborted, with a `LockLostError` as reason, when the lease is lost. Reading `aborted`, `reason` or
   * `throwIfAborted()` checks the lease's deadline first, so after the event loop was paused past
   * the lease it reads aborted at once (a signal derived with `AbortSignal.any` learns it on its own
   * next check of this one, or when this one's timer fires).
   */
  readonly signal: AbortSignal;
  /** True until released or lost (the lease's deadline is checked on each read). */
  readonly held: boolean;
  /**
   * Releases this hold (one level of re-entry). Idempotent; does not throw if the lock was already lost.
   *
   * Resolves `true` when this call ended a live hold: Redis still listed it (or, inside a
   * transaction, it was live when the call was made and is released when the transaction ends).
   * Resolves `false` when there was nothing left to release: released before, its lease already
   * over (counted lost here, or gone from Redis), or taken over. A multi-key lock resolves `true`
   * only if every one of its keys was released live. One case reads `false` although the hold was
   * released: the reply of the release was lost and ioredis re-sent it, so the second run found the
   * hold already gone.
   */
  release(): Promise<boolean>;
  /** Sets a new lease (default: the lease it was taken with). Throws `LockNotHeldError` if no longer held. */
  extend(leaseTime?: number): Promise<void>;
}
