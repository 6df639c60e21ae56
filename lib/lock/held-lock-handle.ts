import { LockLostError } from '../core/errors/lock-lost.error.js';
import { leaseLostAt } from '../core/time/lease-policy.js';
import { DeadlineList, type Deadline } from './deadline-list.js';
import { checkedOnRead } from '../core/time/lease-checked-signal.js';
import type { LockHandle } from './interfaces/lock-handle.interface.js';
import type { LockProtocol } from './protocols/lock-protocol.interface.js';
import type { WatchedEntry } from './lock-watchdog.js';

/** What a handle needs from the service that issued it. */
export interface HeldLockOperations {
  /** Whether the release ended a live hold (see `LockHandle.release`). */
  releaseHeld(handle: HeldLockHandle): Promise<boolean>;
  extendHeld(handle: HeldLockHandle, leaseTime: number): Promise<void>;
  onLost(handle: HeldLockHandle, error: LockLostError): void;
}

/**
 * One hold of one lock (of any kind; a nested re-entry gets its own handle over the same entry).
 *
 * The handle tracks its lease by the lease policy (lease-policy.ts): on the monotonic clock, counted
 * from the moment the acquiring or renewing command was *sent*, so it can only err on the early side.
 * If `leaseLostAt` passes without a confirmed renewal the lock is treated as lost, even when Redis is
 * unreachable and cannot say so.
 *
 * That deadline is checked on every read (`held`, `lost`, `signal`, and the signal's own `aborted`,
 * `reason` and `throwIfAborted()`), not only by its timer: after the event loop was paused (SIGSTOP,
 * a long GC, a VM freeze) Node runs every overdue timer in the order they were due, so user timers
 * due before the lease's end run before the one that marks it lost. Read at that moment, the
 * handle already says lost and its signal is already aborted.
 */
export class HeldLockHandle implements LockHandle {
  // Made on first read of `signal`: building an AbortSignal costs ~5 µs on Node 20 (more than all
  // the rest of an acquire's JavaScript) and most callers never read it.
  private controller?: AbortController;
  private lostError?: LockLostError;
  private expiry?: Deadline;
  private released = false;
  /** Set while a release waits for the surrounding transaction to complete. */
  releasePending = false;
  /** The watchdog's entry renewing this hold while it is watched (kept here so unwatching finds it at once). */
  watchdogEntry?: WatchedEntry;

  constructor(
    readonly protocol: LockProtocol,
    readonly owner: string,
    /** This hold's id (see `AttemptMode.hold`); nested holds share `owner` but not `hold`. */
    readonly hold: string,
    readonly fencingToken: string,
    /** Lease in ms the lock was taken (and is renewed) with. */
    public leaseTime: number,
    /** True when the watchdog renews this lock. */
    readonly watchdog: boolean,
    leaseStartedAt: number,
    private readonly operations: HeldLockOperations,
  ) {
    this.armExpiry(leaseStartedAt);
  }

  get key(): string {
    return this.protocol.name;
  }

  get fencingTokens(): Readonly<Record<string, string>> {
    return { [this.key]: this.fencingToken };
  }

  get signal(): AbortSignal {
    this.checkLease();
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lostError) this.controller.abort(this.lostError);
      else checkedOnRead(this.controller.signal, () => this.checkLease());
    }
    return this.controller.signal;
  }

  /** True once the lease is known to be lost (`signal` is, or will be when read, aborted). */
  get lost(): boolean {
    this.checkLease();
    return this.lostError !== undefined;
  }

  get held(): boolean {
    return !this.released && !this.lost;
  }

  release(): Promise<boolean> {
    if (this.released) return Promise.resolve(false);
    this.released = true;
    return this.operations.releaseHeld(this);
  }

  extend(leaseTime?: number): Promise<void> {
    return this.operations.extendHeld(this, leaseTime ?? this.leaseTime);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** The lease was confirmed by a command sent at `sentAt` (monotonic ms). */
  leaseConfirmed(sentAt: number, leaseTime = this.leaseTime): void {
    // A renewal answered after the lease counted as lost does not bring it back: code may already
    // have seen it lost and stopped, and another holder may have had the lock in between.
    if (this.lost) return;
    this.leaseTime = leaseTime;
    this.armExpiry(sentAt);
  }

  /**
   * Marks the hold lost now if its lease deadline has passed by the monotonic clock, whether or not
   * the timer for it has run yet.
   */
  checkLease(): void {
    const expiry = this.expiry;
    if (expiry !== undefined && !expiry.done && performance.now() >= expiry.at) this.markLost(this.watchdog ? 'unconfirmed' : 'expired');
  }

  /** Marks the hold as gone for good: stops timers and, if it was still held, aborts the signal. */
  markLost(reason: LockLostError['reason']): void {
    this.stopTimers();
    if (this.lostError !== undefined || (this.released && !this.releasePending)) return;
    const error = new LockLostError(this.key, this.fencingToken, reason);
    this.lostError = error;
    this.controller?.abort(error);
    this.operations.onLost(this, error);
  }

  /** Called once the hold is released in Redis. */
  markReleased(): void {
    this.released = true;
    this.releasePending = false;
    this.stopTimers();
  }

  stopTimers(): void {
    LEASE_ENDS.cancel(this.expiry);
    this.expiry = undefined;
  }

  private armExpiry(leaseStartedAt: number): void {
    LEASE_ENDS.cancel(this.expiry);
    // The list's timer rounds down to whole milliseconds: never later than the lease.
    const lostAt = handleLeaseLostAt(this.protocol, this.leaseTime, leaseStartedAt);
    this.expiry = LEASE_ENDS.add(lostAt, () => this.markLost(this.watchdog ? 'unconfirmed' : 'expired'));
  }
}

/**
 * When a hold of `protocol` taken or renewed for `leaseTime` by a command sent at `sentAt` counts as
 * lost: the part of the lease a holder may count on (Redlock: less its drift allowance), less the
 * safety margin (see lease-policy.ts), so that a timer firing late on a loaded machine still aborts
 * `signal` before Redis can hand the lock to another.
 */
export function handleLeaseLostAt(protocol: LockProtocol, leaseTime: number, sentAt: number): number {
  return leaseLostAt(sentAt, protocol.validLease === undefined ? leaseTime : protocol.validLease(leaseTime));
}

/**
 * The lease end of every handle in the process, on one timer (see DeadlineList); like the
 * per-handle timers it replaces, it never keeps the process alive.
 */
const LEASE_ENDS = new DeadlineList(false);
