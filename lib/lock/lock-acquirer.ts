import { randomBytes } from 'node:crypto';
import type { Logger } from '@nestjs/common';
import { LockAcquireAbortedError } from '../core/errors/lock-acquire-aborted.error.js';
import { LockAcquireTimeoutError } from '../core/errors/lock-acquire-timeout.error.js';
import { LockLostError } from '../core/errors/lock-lost.error.js';
import { LockServiceClosedError } from '../core/errors/lock-service-closed.error.js';
import type { RedisConnection } from '../core/connection/redis-connection.js';
import { WakeSubscriber, type WakeChannel, type WakeReason } from './wake-subscriber.js';
import type { WakeConnectionSource } from './protocols/lock-protocol.interface.js';
import type { ResolvedAcquireOptions } from './interfaces/acquire-options.interface.js';
import type { HeldLockHandle } from './held-lock-handle.js';
import type { LockHoldRegistry } from './lock-hold-registry.js';
import { HeldLockFrames } from './held-lock-frames.js';
import type { AttemptRefusal, LockProtocol } from './protocols/lock-protocol.interface.js';
import type { AbandonedHolds } from './abandoned-holds.js';
import type { CheckedOutHold, TransactionHolds } from './transaction-holds.js';
import { BoundedTries, formatKey } from './bounded-try.js';
import type { AcquireCall } from './acquire-call.js';
import { errorMessage } from '../core/errors/error-message.js';
import { toRedisLockError } from '../core/redis/redis-errors.js';

/** The continuation of a refused try whose refusal is wanted as such. */
const asIs = (refusal: AttemptRefusal): AttemptRefusal => refusal;

/**
 * Takes one lock of any kind: tries, and while it is held elsewhere waits for a release message on
 * its wake channel (one shared subscriber), for the holder's lease end, the deadline or an abort,
 * whichever comes first. Nothing polls at a fixed interval; a kind with a `heartbeat` wakes that
 * often to keep its place in line.
 *
 * Owner ids are `<clientId>:<n>`, one per acquire; a nested acquire inside a lock section of this
 * acquirer re-enters under the section's owner id instead, and an acquire inside a transaction
 * whose deferred release keeps a hold of the lock re-enters that hold (`TransactionHolds`).
 * The flow runs one way: the acquirer decides whose hold a call takes and how long it waits, hands
 * each try to `BoundedTries`, which settles it (won, refused, or failed with what it may have taken
 * undone), and gives a won hold to `LockHoldRegistry.issue` for its handle. Neither calls back.
 */
export class LockAcquirer {
  /** Identifies this module instance among all lock owners. */
  readonly clientId = randomBytes(6).toString('hex');
  private ownerSequence = 0;
  private holdSequence = 0;
  private readonly wake: WakeSubscriber;
  private readonly tries: BoundedTries;
  private closed = false;
  private readonly stopWatching: () => void;

  constructor(
    private readonly connection: RedisConnection,
    wakeConnection: WakeConnectionSource,
    private readonly holds: LockHoldRegistry,
    private readonly transactions: TransactionHolds,
    abandoned: AbandonedHolds,
    private readonly logger: Logger,
  ) {
    this.wake = new WakeSubscriber(wakeConnection);
    this.tries = new BoundedTries(connection, abandoned);
    // Parked waiters wait for a message, not a reply: once Redis is unreachable past the bound
    // they try again at once, and that try fails fast with RedisConnectionError.
    this.stopWatching = connection.onUnreachable(() => this.wake.wakeAll());
  }

  /**
   * Acquires `protocol`'s lock. `wait` false resolves `null` when it is held elsewhere; `wait` true
   * waits up to `options.waitTimeout` and then throws `LockAcquireTimeoutError` for `reportedKey`.
   */
  acquire(
    protocol: LockProtocol,
    options: ResolvedAcquireOptions,
    wait: boolean,
    reportedKey: string | string[],
  ): Promise<HeldLockHandle | null> {
    // Not async (hot path): the promise of acquireAs is handed on as is.
    if (this.closed) return Promise.reject(new LockServiceClosedError());
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(new LockAcquireAbortedError(reportedKey, signal.reason));
    const enclosingOwner = this.reentrantOwner(protocol);
    const mayKeep = enclosingOwner === undefined && protocol.reentrancyKey !== undefined && this.transactions.active;
    const kept = mayKeep ? this.transactions.checkOut(protocol) : undefined;
    if (kept) return this.reenterKept(kept, protocol, options, wait, reportedKey);
    return this.acquireAs(protocol, enclosingOwner, options, wait, reportedKey);
  }

  /** Stops every wait (they fail with `LockServiceClosedError`) and refuses new acquires. */
  close(): void {
    this.closed = true;
    this.stopWatching();
    this.wake.close();
  }

  /**
   * Acquires under `enclosingOwner` (a re-entry) or, when undefined, under a fresh owner id. The
   * first try is chained without an async frame (the uncontended path); only a caller that has to
   * wait enters `waitForLock`.
   */
  private acquireAs(
    protocol: LockProtocol,
    enclosingOwner: string | undefined,
    options: ResolvedAcquireOptions,
    wait: boolean,
    reportedKey: string | string[],
  ): Promise<HeldLockHandle | null> {
    const owner = enclosingOwner ?? `${this.clientId}:${++this.ownerSequence}`;
    const hold = `${owner}/${++this.holdSequence}`;
    const reentry = enclosingOwner !== undefined;
    const willWait = wait && options.waitTimeout > 0;
    // One clock read: the deadline, and the lease's start (it is sent right after, so counting the
    // lease from here errs on the early side only).
    const sentAt = performance.now();
    const deadline = sentAt + options.waitTimeout;
    const call: AcquireCall = { protocol, owner, hold, reentry, willWait, options, deadline, reportedKey, granted: false };

    const afterRefusal = (refusal: AttemptRefusal): Promise<HeldLockHandle> | null => {
      if (!wait) return null;
      if (!willWait) throw new LockAcquireTimeoutError(reportedKey, options.waitTimeout);
      // After a late grant the deadline and the signal are checked before the next try (see waitForTurn).
      return this.waitForLock(call, 0, refusal.reason === 'granted-late' ? refusal : undefined);
    };
    // Local FIFO for the plain lock: while other waiters of this process are parked on the key, a
    // newcomer queues behind them instead of barging in the moment a release frees the key.
    const queueBehind = willWait && protocol.localFifo && !reentry ? this.wake.queueBehindFor(protocol.wakeChannel) : 0;
    if (queueBehind > 0) return this.waitForLock(call, queueBehind);
    return this.tryOnce(call, false, sentAt, afterRefusal);
  }

  /**
   * One try of `call`, sent at `sentAt` (its lease counted from then): a won hold becomes its handle
   * (`LockHoldRegistry.issue`), a refusal goes to `refused`, inside the same promise (its throw
   * rejects it). A nested acquire whose section no longer holds the lock (lease ran out, Redis lost
   * it) is refused rather than taken afresh under the section's owner: work that read under the
   * section's token would otherwise write under a newer one, a lost update no fence could catch.
   */
  private tryOnce<T>(
    call: AcquireCall,
    waiting: boolean,
    sentAt: number,
    refused: (refusal: AttemptRefusal) => T,
  ): Promise<HeldLockHandle | Awaited<T>> {
    return this.tries.settle(call, waiting, sentAt).then((outcome) => {
      if (outcome.acquired) return this.holds.issue(call, outcome, sentAt);
      if (outcome.reason !== 'section-lost') return refused(outcome);
      const name = call.protocol.name;
      throw new LockLostError(name, HeldLockFrames.currentHandle()?.fencingTokens[name] ?? 'unknown', 'not-owner');
    }) as Promise<HeldLockHandle | Awaited<T>>;
  }

  /**
   * Waits for the lock after a refused first try (or, with `queueBehind`, behind this process's
   * parked waiters first): parks until its turn may have come, then tries again. `firstRefusal`, when
   * given, is weighed (deadline, signal) before the next try instead of trying again at once.
   */
  private async waitForLock(call: AcquireCall, queueBehind: number, firstRefusal?: AttemptRefusal): Promise<HeldLockHandle> {
    const { protocol, owner, options, deadline, reportedKey } = call;
    // Subscribe before the next try: a release that lands between that try and the wait is then
    // counted by the channel and not lost.
    let channel: WakeChannel | undefined;
    try {
      const joining = this.wake.join(protocol.wakeChannel, protocol.wakesByOwner ? owner : undefined, deadline - performance.now());
      channel = await joining.catch((error: unknown) => {
        throw toRedisLockError(error, `wait for lock ${formatKey(reportedKey)}`, this.connection.reachability?.cause);
      });
      let woken = false;
      if (queueBehind > 0) {
        const reason = await channel.wait(Math.min(queueBehind, deadline - performance.now()), options.signal);
        this.throwIfAborted(reason, reportedKey, options);
        woken = reason === 'woken';
      }
      let refusal = firstRefusal;
      for (;;) {
        if (refusal) woken = await this.waitForTurn(channel, refusal, call, woken);
        const result = await this.tryOnce(call, true, performance.now(), asIs);
        if (!('acquired' in result)) return result;
        refusal = result;
      }
    } finally {
      channel?.leave();
      // A waiter that gives up leaves the line; its liveness deadline removes it anyway.
      if (!call.granted && protocol.leave) {
        await protocol.leave(this.connection, owner).catch((error: unknown) => {
          if (this.connection.outages.absorb('wait queues left to their deadline', error)) return;
          this.logger.debug(`Could not leave the wait queue of "${protocol.name}": ${errorMessage(error)}`);
        });
      }
    }
  }

  /**
   * Re-enters the hold that the current transaction kept of this lock (released earlier in it, its
   * release deferred) instead of waiting for that release until COMMIT. When the kept hold's lease
   * ran out meanwhile, nothing is left to re-enter: the acquire then takes the lock afresh (with a
   * new, larger fencing token) like any other owner.
   */
  private async reenterKept(
    kept: CheckedOutHold,
    protocol: LockProtocol,
    options: ResolvedAcquireOptions,
    wait: boolean,
    reportedKey: string | string[],
  ): Promise<HeldLockHandle | null> {
    let handle: HeldLockHandle | null = null;
    let lapsed = false;
    try {
      handle = await this.acquireAs(protocol, kept.handle.owner, options, wait, reportedKey);
      if (handle) this.transactions.reentered(kept, handle);
      return handle;
    } catch (error) {
      if (!(error instanceof LockLostError)) throw error;
      lapsed = true;
    } finally {
      if (!handle && !lapsed) this.transactions.putBack(kept);
    }
    return this.acquireAs(protocol, undefined, options, wait, reportedKey);
  }

  /** The owner id an enclosing section of *this* acquirer holds the lock under, if any. */
  private reentrantOwner(protocol: LockProtocol): string | undefined {
    if (protocol.reentrancyKey === undefined) return undefined;
    const owner = HeldLockFrames.ownerOf(protocol.reentrancyKey);
    return owner?.startsWith(`${this.clientId}:`) ? owner : undefined;
  }

  /** Parks until a release message, the holder's lease end, the deadline, or an abort. */
  private async waitForTurn(channel: WakeChannel, outcome: AttemptRefusal, call: AcquireCall, wasWoken: boolean): Promise<boolean> {
    const { protocol, deadline, options, reportedKey } = call;
    const now = performance.now();
    const remaining = deadline - now;
    if (remaining <= 0) throw new LockAcquireTimeoutError(reportedKey, options.waitTimeout);
    // A vanished key, or a grant handed back as late: the next try may win at once, unless the call
    // was aborted meanwhile (a give-back Redis does not run ends the wait for it on an abort).
    if (outcome.reason === 'vanished' || outcome.reason === 'granted-late') {
      if (options.signal?.aborted) this.throwIfAborted('aborted', reportedKey, options);
      return wasWoken;
    }
    // Held without a lease: only a release can free it, so only the deadline (or the heartbeat)
    // bounds the wait.
    let sleep = remaining;
    if (outcome.reason === 'held') {
      channel.heldUntil(now + outcome.waitMs);
      sleep = Math.min(outcome.waitMs, remaining);
    }
    if (protocol.heartbeat !== undefined) sleep = Math.min(sleep, protocol.heartbeat);
    const reason = await channel.wait(sleep, options.signal, wasWoken);
    this.throwIfAborted(reason, reportedKey, options);
    return reason === 'woken';
  }

  private throwIfAborted(reason: WakeReason, reportedKey: string | string[], options: ResolvedAcquireOptions): void {
    if (reason !== 'aborted') return;
    if (this.closed) throw new LockServiceClosedError();
    throw new LockAcquireAbortedError(reportedKey, options.signal?.reason);
  }
}
