import type { LockHandle } from '../lock/interfaces/lock-handle.interface.js';
import { checkedOnRead } from '../core/time/lease-checked-signal.js';

/**
 * The leader lock handed to the `LeadershipHooks`: the lock of one term, whose `signal` aborts when
 * the term ends for any reason (the lease lost, or this instance stepping down), and whose
 * `release()` steps down (another instance takes over at once).
 *
 * Like the lock's own, `held` and the signal's `aborted` check the lease when read: a leader that
 * was paused past its lease sees the term over at its first turn, before the election notices.
 */
export class LeadershipLock implements LockHandle {
  private readonly controller = new AbortController();
  /** Whether the term ended (kept here: reading the signal's own `aborted` runs the check). */
  private ended = false;

  constructor(
    private readonly inner: LockHandle,
    private readonly ttl: number,
    /** Ends the term; resolves whether the release of its lock ended a live hold. */
    private readonly stepDown: () => Promise<boolean>,
  ) {
    checkedOnRead(this.controller.signal, () => this.checkLease());
  }

  get key(): string {
    return this.inner.key;
  }

  get fencingToken(): string {
    return this.inner.fencingToken;
  }

  get fencingTokens(): Readonly<Record<string, string>> {
    return this.inner.fencingTokens;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get held(): boolean {
    this.checkLease();
    return !this.ended && this.inner.held;
  }

  /**
   * Steps down; resolves once the lock is released, with whether that ended a live hold (see
   * `LockHandle.release`). Inside `onLeadershipLost`, releases at once.
   */
  release(): Promise<boolean> {
    return this.ended ? this.inner.release() : this.stepDown();
  }

  /** Extends the lease (default: the election's `ttl`); the election renews it on its own anyway. */
  extend(leaseTime?: number): Promise<void> {
    return this.inner.extend(leaseTime ?? this.ttl);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Ends the term: aborts `signal` with `reason`. */
  end(reason: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.controller.abort(reason);
  }

  /** Ends the term at once when the lock's lease is over (reading its signal checks the lease's deadline). */
  private checkLease(): void {
    if (!this.ended && this.inner.signal.aborted) this.end(this.inner.signal.reason);
  }
}
