import type { LockHandle } from '../lock/interfaces/lock-handle.interface.js';

/**
 * The leader lock handed to the `LeadershipHooks`: the lock of one term, whose `signal` aborts when
 * the term ends for any reason (the lease lost, or this instance stepping down), and whose
 * `release()` steps down (another instance takes over at once).
 */
export class LeadershipLock implements LockHandle {
  private readonly controller = new AbortController();

  constructor(
    private readonly inner: LockHandle,
    private readonly ttl: number,
    private readonly stepDown: () => Promise<void>,
  ) {}

  get key(): string {
    return this.inner.key;
  }

  get fencingToken(): string {
    return this.inner.fencingToken;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get held(): boolean {
    return this.inner.held && !this.controller.signal.aborted;
  }

  /** Steps down; resolves once the lock is released. Inside `onLeadershipLost`, releases at once. */
  release(): Promise<void> {
    return this.controller.signal.aborted ? this.inner.release() : this.stepDown();
  }

  /** Extends the lease (default: the election's `ttl`); the election renews it on its own anyway. */
  extend(leaseTime?: number): Promise<void> {
    return this.inner.extend(leaseTime ?? this.ttl);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  /** Ends the term: aborts `signal` with `reason`. */
  end(reason: Error): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }
}
