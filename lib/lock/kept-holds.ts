import type { HeldLockHandle } from './held-lock-handle.js';
import type { LockProtocol } from './protocols/lock-protocol.interface.js';

/**
 * Holds whose release waits for the end of a transaction, per transaction and lock, so that the
 * same transaction can take such a lock again: it re-enters the kept hold (a nested hold in Redis,
 * released with the others when the transaction ends) instead of waiting for its own deferred
 * release until COMMIT.
 *
 * A kept hold serves one section at a time: it is checked out while a section re-enters it and is
 * kept again when that section's release is deferred in turn, so two concurrent branches of one
 * transaction still exclude each other.
 */
export class KeptHolds {
  private readonly byTransaction = new WeakMap<object, Map<string, HeldLockHandle>>();
  /** Re-entered hold -> the kept hold it was taken from, to put that back if the re-entry is undone. */
  private readonly reenteredFrom = new WeakMap<HeldLockHandle, { transaction: object; kept: HeldLockHandle }>();

  /** `handle`'s release now waits for `transaction`: later acquires of its lock in it may re-enter. */
  keep(transaction: object, handle: HeldLockHandle): void {
    let holds = this.byTransaction.get(transaction);
    if (!holds) this.byTransaction.set(transaction, (holds = new Map()));
    holds.set(slotOf(handle.protocol), handle);
  }

  /** Takes out the kept hold of `protocol`'s lock and kind in `transaction`, if there is a live one. */
  checkOut(transaction: object, protocol: LockProtocol): HeldLockHandle | undefined {
    const holds = this.byTransaction.get(transaction);
    const slot = slotOf(protocol);
    const kept = holds?.get(slot);
    if (!kept) return undefined;
    holds!.delete(slot);
    return kept.lost ? undefined : kept;
  }

  /** `reentered` was acquired by re-entering `kept`. */
  reentered(transaction: object, kept: HeldLockHandle, reentered: HeldLockHandle): void {
    this.reenteredFrom.set(reentered, { transaction, kept });
  }

  /** A checked-out hold was not re-entered after all (or the re-entry was undone): keep it again. */
  putBack(transaction: object, kept: HeldLockHandle): void {
    const slot = slotOf(kept.protocol);
    const holds = this.byTransaction.get(transaction);
    if (!holds?.has(slot)) this.keep(transaction, kept);
  }

  /** `handle` was released before its transaction ended: the hold it re-entered is available again. */
  undone(handle: HeldLockHandle): void {
    const origin = this.reenteredFrom.get(handle);
    if (origin) this.putBack(origin.transaction, origin.kept);
  }

  /** The transaction ended and `handle` is being released: nothing may re-enter it any more. */
  forget(transaction: object, handle: HeldLockHandle): void {
    const holds = this.byTransaction.get(transaction);
    const slot = slotOf(handle.protocol);
    if (holds?.get(slot) === handle) holds.delete(slot);
  }
}

/**
 * One slot per lock and side: a kept write hold is not re-entered for a read, nor the reverse; the
 * exclusive kinds (plain, fair) share one owner hash, and so one slot.
 */
function slotOf(protocol: LockProtocol): string {
  return `${protocol.side ?? 'exclusive'}\u0000${protocol.reentrancyKey ?? protocol.name}`;
}
