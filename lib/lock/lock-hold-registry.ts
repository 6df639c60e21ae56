import { Inject, Injectable, Logger } from '@nestjs/common';
import { LockLostError } from '../core/errors/lock-lost.error.js';
import { LockNotHeldError } from '../core/errors/lock-not-held.error.js';
import { RedisConnectionError } from '../core/errors/redis-connection.error.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { RedisConnection } from '../core/redis/redis-connection.js';
import { TransactionSynchronizer } from '../core/transaction/transaction-synchronizer.interface.js';
import { OPTION_BOUNDS } from '../core/options/option-bounds.js';
import { resolveAcquireOptions } from './resolve-acquire-options.js';
import type { ResolvedAcquireOptions } from './interfaces/acquire-options.interface.js';
import { HeldLockHandle, type HeldLockOperations } from './held-lock-handle.js';
import type { LockHandle } from './interfaces/lock-handle.interface.js';
import { KeptHolds } from './kept-holds.js';
import { LockObserver } from './lock-observer.js';
import { LockWatchdog } from './lock-watchdog.js';
import { runRenewal } from './protocols/run-renewal.js';
import { MultiLockHandle } from './multi-lock-handle.js';
import type { LockProtocol } from './protocols/lock-protocol.interface.js';
import { errorMessage } from '../core/errors/error-message.js';

/** First and longest pause between two tries of `releaseUnknown` while Redis cannot be reached (ms). */
const UNDO_FIRST_RETRY_MS = 100;
const UNDO_MAX_RETRY_MS = 2_000;

/**
 * The holds one `LockService` handed out: it issues their handles, keeps the watched ones alive,
 * and runs their release, extend and loss. A release inside an active transaction is deferred to
 * the transaction's end (the watchdog keeps renewing meanwhile; the lease is the backstop), and the
 * same transaction may re-enter a hold whose release waits for it.
 *
 * One per module instance, injected into `LockService`.
 */
@Injectable()
export class LockHoldRegistry implements HeldLockOperations {
  private readonly logger = new Logger('LockService');
  private readonly watchdog: LockWatchdog;
  private readonly keptHolds = new KeptHolds();
  /** Holds whose owner (a leader election, an `@OnOneInstance` lease) logs their loss in its own words. */
  private readonly lossLoggedByOwner = new WeakSet<LockHandle>();
  private readonly defaults: RedisLockConfig['lock'];
  private stopped = false;
  /** Ends the retry waits of `releaseUnknown` (at stop). */
  private readonly undoWaits = new Set<() => void>();
  /** The connection's publish command, read once: it follows from the client, which never changes. */
  private readonly publishCommand: string;

  constructor(
    private readonly connection: RedisConnection,
    @Inject(TransactionSynchronizer) private readonly transactions: TransactionSynchronizer,
    private readonly observer: LockObserver,
    @Inject(REDIS_LOCK_CONFIG) config: RedisLockConfig,
  ) {
    this.defaults = config.lock;
    this.publishCommand = connection.publishCommand;
    this.watchdog = new LockWatchdog(
      () => this.connection.client,
      config.lock.leaseTime,
      connection.isCluster,
      (error) => {
        if (!connection.outages.absorb('lock renewals failed', error)) this.logger.warn(`Lock renewal failed, will retry: ${errorMessage(error)}`);
      },
    );
  }

  /** The handle of a hold just taken in Redis by a command sent at `sentAt`; watched when the options say so. */
  issue(protocol: LockProtocol, owner: string, hold: string, fencingToken: string, sentAt: number, options: ResolvedAcquireOptions): HeldLockHandle {
    const handle = new HeldLockHandle(protocol, owner, hold, fencingToken, options.leaseTime, options.watchdog, sentAt, this);
    if (options.watchdog) this.watchdog.watch(handle);
    return handle;
  }

  /** Whether a transaction is active here: only then may an acquire re-enter a kept hold (`acquireInTransaction`). */
  inTransaction(): boolean {
    return this.transactions.isActive();
  }

  /**
   * Runs `acquireAs` for a fresh acquire of `protocol`'s lock. When the current transaction keeps a
   * live hold of that lock (released earlier in it, release deferred), the acquire re-enters that
   * hold's owner instead of waiting for its own deferred release until COMMIT.
   *
   * @param acquireAs acquires under the given owner id (a re-entry), or a fresh one when undefined
   */
  acquireInTransaction(
    protocol: LockProtocol,
    acquireAs: (owner: string | undefined) => Promise<HeldLockHandle | null>,
  ): Promise<HeldLockHandle | null> {
    const transaction = this.transactions.isActive() ? this.transactions.currentTransaction?.() : undefined;
    const kept = transaction && this.keptHolds.checkOut(transaction, protocol);
    return kept ? this.reenterKept(transaction, kept, acquireAs) : acquireAs(undefined);
  }

  /**
   * Ends `handle`'s hold; resolves whether it was live (see `LockHandle.release`). Inside an active
   * transaction the release waits for the transaction's end and the call resolves `true` at once:
   * the hold was live when it was asked for.
   */
  releaseHeld(handle: HeldLockHandle): Promise<boolean> {
    if (handle.lost) {
      this.forget(handle);
      this.releaseLost(handle);
      return Promise.resolve(false);
    }
    if (this.transactions.isActive()) {
      // The lock must outlive COMMIT, or a second worker could act on data the first has not
      // committed yet.
      handle.releasePending = true;
      const transaction = handle.protocol.reentrancyKey === undefined ? undefined : this.transactions.currentTransaction?.();
      if (transaction) this.keptHolds.keep(transaction, handle);
      this.transactions.register({
        afterCompletion: async () => {
          if (transaction) this.keptHolds.forget(transaction, handle);
          await this.releaseNow(handle);
        },
      });
      return Promise.resolve(true);
    }
    return this.releaseNow(handle);
  }

  async extendHeld(handle: HeldLockHandle, leaseTime: number): Promise<void> {
    const lease = resolveAcquireOptions({ leaseTime }, this.defaults).leaseTime;
    if (!handle.held && !handle.releasePending) throw new LockNotHeldError(handle.key, 'extend');
    const renewal = handle.protocol.renewal(handle.owner, handle.hold);
    const sentAt = performance.now();
    const [extended] = renewal.target
      ? await renewal.target.renew(renewal.script, [renewal], lease)
      : await runRenewal(this.connection.client, renewal.script, [renewal], lease);
    if (extended === -1) {
      throw new RedisConnectionError(
        `Could not extend lock ${JSON.stringify(handle.key)}: too few Redlock masters answered to confirm it. ` +
          'It stays held until its current lease ends (its signal aborts then); retry the extend.',
      );
    }
    if (extended !== 1) {
      handle.markLost('not-owner');
      throw new LockNotHeldError(handle.key, 'extend');
    }
    handle.leaseConfirmed(sentAt, lease);
  }

  /**
   * Ends a hold `delayMs` from now rather than at once, for a handover that must keep the lock held
   * a moment longer without keeping its caller waiting (see OneInstanceLeases.handBack): the lease in
   * Redis is set to `delayMs` (a renewal: a hold Redis no longer lists rejects with
   * LockNotHeldError, one it cannot reach with RedisConnectionError), and the handle counts as
   * released here, so the lease running out in Redis is no loss. Shorter than the shortest lease:
   * released at once. Resolves as `release()` does: whether it ended a live hold.
   */
  async releaseAfter(handle: LockHandle, delayMs: number): Promise<boolean> {
    if (!(handle instanceof HeldLockHandle) || delayMs < OPTION_BOUNDS.leaseTime.min) return handle.release();
    await this.extendHeld(handle, Math.ceil(delayMs));
    this.forget(handle);
    handle.markReleased();
    this.observer.released(handle);
    return true;
  }

  onLost(handle: HeldLockHandle, error: LockLostError): void {
    this.forget(handle);
    // One line per loss: an owner that logs it itself (naming what it guarded) is not doubled here.
    if (!this.lossLoggedByOwner.has(handle)) this.logger.warn(error.message);
    this.observer.lost(handle, error);
  }

  /** For the module's own lease owners (scheduling): `handle`'s loss is logged by its owner, not again here. Events are unchanged. */
  ownerLogsLoss(handle: LockHandle): void {
    this.lossLoggedByOwner.add(handle);
  }

  /**
   * Releases holds that were taken but never handed to the caller (the other parts of a multi-key
   * acquire that failed) at once, even inside a transaction: nothing ran under them.
   */
  async releaseUnused(handles: readonly LockHandle[]): Promise<void> {
    await Promise.allSettled(
      handles.flatMap((h) => (h instanceof MultiLockHandle ? h.parts : [h])).map((h) => {
        if (!(h instanceof HeldLockHandle)) return h.release();
        this.keptHolds.undone(h);
        // Nobody else will release it: with Redis out of reach, it is retried until its lease ends.
        return this.releaseNow(h).catch((error: unknown) => {
          if (error instanceof RedisConnectionError) this.releaseUnknown(h.protocol, h.owner, h.hold, performance.now() + h.leaseTime);
          throw error;
        });
      }),
    );
  }

  /**
   * Ends one hold (by its id) of an acquire whose caller is gone: it gave up while the winning try
   * was in flight, or the handle already counts as lost. In the background, never failing: the
   * lease frees the lock anyway, and a hold Redis dropped already makes the release a no-op.
   */
  releaseAbandoned(protocol: LockProtocol, owner: string, hold: string): void {
    protocol.release(this.connection.client, owner, this.publishCommand, hold).catch((error: unknown) => {
      if (this.connection.outages.absorb('abandoned acquires left to their lease', error)) return;
      this.logger.debug(`Could not release an abandoned acquire of "${protocol.name}": ${errorMessage(error)}`);
    });
  }

  /**
   * Ends in Redis one hold (by its id) of a try whose outcome is unknown: Redis did not answer it
   * (it may run it when it resumes) or the connection dropped with it sent. Sent on the same
   * connection as that try, after it, so Redis runs the release after the try: a grant nobody
   * received is undone, and a try that never ran or was refused makes it a no-op (the release is
   * ownership- and hold-checked). A kind with a wait line is left too (`leave`). While Redis is
   * unreachable it is retried each time the connection becomes reachable again, and with backoff,
   * until it is done or `until` (monotonic ms: the lease's end, when Redis frees the hold anyway)
   * passes, or the module stops. In the background, never failing.
   */
  releaseUnknown(protocol: LockProtocol, owner: string, hold: string, until: number): void {
    this.undoUntil(protocol, owner, hold, until).catch(() => undefined);
  }

  /** Stops renewing: the module is shutting down. */
  stop(): void {
    this.stopped = true;
    this.watchdog.stop();
    for (const wake of [...this.undoWaits]) wake();
  }

  private async undoUntil(protocol: LockProtocol, owner: string, hold: string, until: number): Promise<void> {
    const client = this.connection.client;
    let released = false;
    for (let delay = UNDO_FIRST_RETRY_MS; ; delay = Math.min(delay * 2, UNDO_MAX_RETRY_MS)) {
      if (this.stopped || client.status === 'end' || performance.now() >= until) {
        this.logger.debug(`Gave up undoing an unanswered acquire of "${protocol.name}": its lease frees it.`);
        return;
      }
      try {
        if (!released) await protocol.release(client, owner, this.publishCommand, hold);
        released = true;
        if (protocol.leave) await protocol.leave(client, owner, this.publishCommand);
        return;
      } catch (error) {
        if (!(error instanceof RedisConnectionError)) {
          this.logger.debug(`Could not undo an unanswered acquire of "${protocol.name}": ${errorMessage(error)}`);
          return;
        }
      }
      await this.untilReachableOr(Math.min(delay, until - performance.now()));
    }
  }

  /** Resolves when the connection is reachable again, after `ms`, or when the module stops. */
  private untilReachableOr(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stopListening?.();
        this.undoWaits.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      timer.unref();
      const stopListening = this.connection.reachability?.onReachable(done);
      this.undoWaits.add(done);
    });
  }

  /** Ends the hold in Redis now; resolves whether Redis still listed it. */
  private releaseNow(handle: HeldLockHandle): Promise<boolean> {
    this.forget(handle);
    if (handle.lost) {
      this.releaseLost(handle);
      return Promise.resolve(false);
    }
    handle.markReleased();
    // Chained, not async: a release is half of every lock cycle.
    return handle.protocol.release(this.connection.client, handle.owner, this.publishCommand, handle.hold).then((result) => {
      this.observer.released(handle);
      if (result === -1) {
        this.logger.debug(`Released lock "${handle.key}" was no longer held by its owner (lease ended before release).`);
        return false;
      }
      return true;
    });
  }

  /**
   * Ends in Redis a hold this side already counts as lost. Its lease may have run out here first
   * (a nested hold with its own short lease inside a longer one, or the early margin) or Redis may
   * have been out of reach: Redis may still list it, and a nested hold left there would keep the
   * lock held after its owner's last release. `release()` of a lost handle never waits for, nor
   * fails with, an unreachable Redis.
   */
  private releaseLost(handle: HeldLockHandle): void {
    this.releaseAbandoned(handle.protocol, handle.owner, handle.hold);
  }

  private async reenterKept(
    transaction: object,
    kept: HeldLockHandle,
    acquireAs: (owner: string | undefined) => Promise<HeldLockHandle | null>,
  ): Promise<HeldLockHandle | null> {
    let handle: HeldLockHandle | null = null;
    let lapsed = false;
    try {
      handle = await acquireAs(kept.owner);
      if (handle) this.keptHolds.reentered(transaction, kept, handle);
      return handle;
    } catch (error) {
      // The kept hold's lease ran out meanwhile: nothing is left to re-enter, so this section
      // takes the lock afresh (with a new, larger fencing token) like any other owner.
      if (!(error instanceof LockLostError)) throw error;
      lapsed = true;
    } finally {
      if (!handle && !lapsed) this.keptHolds.putBack(transaction, kept);
    }
    return acquireAs(undefined);
  }

  private forget(handle: HeldLockHandle): void {
    handle.stopTimers();
    if (handle.watchdog) this.watchdog.unwatch(handle);
  }
}
