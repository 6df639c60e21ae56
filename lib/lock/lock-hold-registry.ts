import { Inject, Injectable, Logger } from '@nestjs/common';
import { LockLostError } from '../core/errors/lock-lost.error.js';
import { LockNotHeldError } from '../core/errors/lock-not-held.error.js';
import { RedisConnectionError } from '../core/errors/redis-connection.error.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import { OPTION_BOUNDS } from '../core/options/option-bounds.js';
import { resolveAcquireOptions } from './resolve-acquire-options.js';
import { HeldLockHandle, type HeldLockOperations } from './held-lock-handle.js';
import type { LockHandle } from './interfaces/lock-handle.interface.js';
import { LockObserver } from './lock-observer.js';
import { LockWatchdog } from './lock-watchdog.js';
import { runRenewal } from './protocols/run-renewal.js';
import { MultiLockHandle } from './multi-lock-handle.js';
import type { AttemptGrant } from './protocols/lock-protocol.interface.js';
import { errorMessage } from '../core/errors/error-message.js';
import { AbandonedHolds } from './abandoned-holds.js';
import type { AcquireCall } from './acquire-call.js';
import { LockAcquireAbortedError } from '../core/errors/lock-acquire-aborted.error.js';
import { TransactionHolds } from './transaction-holds.js';

/**
 * The holds one `LockService` handed out: it issues their handles, keeps the watched ones alive,
 * and runs their release, extend and loss. A release inside an active transaction is deferred to
 * the transaction's end by `TransactionHolds`.
 *
 * One per module instance, injected into `LockService`.
 */
@Injectable()
export class LockHoldRegistry implements HeldLockOperations {
  private readonly logger = new Logger('LockService');
  private readonly watchdog: LockWatchdog;
  /** Runs a release that waited for its transaction's end (made once: releases are half of every lock cycle). */
  private readonly releaseDeferred = (handle: HeldLockHandle): Promise<boolean> => this.releaseNow(handle);
  /** Holds whose owner (a leader election, an `@OnOneInstance` lease) logs their loss in its own words. */
  private readonly lossLoggedByOwner = new WeakSet<LockHandle>();
  private readonly defaults: RedisLockConfig['lock'];

  constructor(
    private readonly connection: RedisConnection,
    private readonly transactions: TransactionHolds,
    private readonly abandoned: AbandonedHolds,
    private readonly observer: LockObserver,
    @Inject(REDIS_LOCK_CONFIG) config: RedisLockConfig,
  ) {
    this.defaults = config.lock;
    this.watchdog = new LockWatchdog(connection, config.lock.leaseTime, connection.isCluster, (error) => {
      if (connection.outages.absorb('lock renewals failed', error)) return;
      this.logger.warn(`Lock renewal failed, will retry: ${errorMessage(error)}`);
    });
  }

  /**
   * The handle of the hold that a try of `call` won (`grant`), its lease counted from `leaseFrom`;
   * watched when the options say so. The one place a handle is made. A caller that gave up while
   * the winning try was in flight gets a rejection instead, and the hold is handed straight back.
   */
  issue(call: AcquireCall, grant: AttemptGrant, leaseFrom: number): HeldLockHandle | Promise<never> {
    const { protocol, options } = call;
    const owner = grant.owner ?? call.owner;
    const handle = new HeldLockHandle(protocol, owner, call.hold, grant.fencingToken, options.leaseTime, options.watchdog, leaseFrom, this);
    if (options.watchdog) this.watchdog.watch(handle);
    if (options.signal?.aborted) {
      const reason: unknown = options.signal.reason;
      return handle.release().then(() => {
        throw new LockAcquireAbortedError(call.reportedKey, reason);
      });
    }
    return handle;
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
    if (this.transactions.deferRelease(handle, this.releaseDeferred)) return Promise.resolve(true);
    return this.releaseNow(handle);
  }

  async extendHeld(handle: HeldLockHandle, leaseTime: number): Promise<void> {
    const lease = resolveAcquireOptions({ leaseTime }, this.defaults).leaseTime;
    if (!handle.held && !handle.releasePending) throw new LockNotHeldError(handle.key, 'extend');
    const renewal = handle.protocol.renewal(handle.owner, handle.hold);
    const sentAt = performance.now();
    const [extended] = renewal.target
      ? await renewal.target.renew(renewal.script, [renewal], lease)
      : await runRenewal(this.connection, renewal.script, [renewal], lease);
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
      handles
        .flatMap((h) => (h instanceof MultiLockHandle ? h.parts : [h]))
        .map((h) => {
          if (!(h instanceof HeldLockHandle)) return h.release();
          this.transactions.undone(h);
          // Nobody else will release it: with Redis out of reach, it is retried until its lease ends.
          return this.releaseNow(h).catch((error: unknown) => {
            if (error instanceof RedisConnectionError) {
              this.abandoned.releaseUnknown(h.protocol, h.owner, h.hold, performance.now() + h.leaseTime);
            }
            throw error;
          });
        }),
    );
  }

  /** Stops renewing: the module is shutting down. */
  stop(): void {
    this.watchdog.stop();
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
    return handle.protocol.release(this.connection, handle.owner, handle.hold).then((result) => {
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
    this.abandoned.releaseAbandoned(handle.protocol, handle.owner, handle.hold);
  }

  private forget(handle: HeldLockHandle): void {
    handle.stopTimers();
    if (handle.watchdog) this.watchdog.unwatch(handle);
  }
}
