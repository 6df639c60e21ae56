import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InvalidLockKeyError } from '../errors/invalid-lock-key.error.js';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { LockAcquireAbortedError } from '../errors/lock-acquire-aborted.error.js';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error.js';
import { LockLostError } from '../errors/lock-lost.error.js';
import { LockNotHeldError } from '../errors/lock-not-held.error.js';
import { LockServiceClosedError } from '../errors/lock-service-closed.error.js';
import { RedisConnectionError } from '../errors/redis-connection.error.js';
import { UnsupportedInRedlockModeError } from '../errors/unsupported-in-redlock-mode.error.js';
import { RedisKeySpace } from '../keys/redis-key-space.js';
import { openTelemetryTracing } from '../observability/tracing/open-telemetry-tracing.js';
import { NO_TRACING, type AcquireTraceInfo, type RedisLockTracing } from '../observability/tracing/redis-lock-tracing.js';
import type { RedisLockConfig } from '../options/redis-lock-config.js';
import { preloadScripts } from '../redis/preload-scripts.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { toRedisLockError } from '../redis/redis-errors.js';
import { WakeSubscriber, type WakeChannel, type WakeReason } from '../redis/wake-subscriber.js';
import { REDIS_LOCK_CONFIG } from '../redis-lock.constants.js';
import { TransactionSynchronizer } from '../transaction/transaction-synchronizer.interface.js';
import { resolveAcquireOptions, type ResolvedAcquireOptions } from './acquire-options.js';
import { HeldLockHandle, type HeldLockOperations } from './held-lock-handle.js';
import { KeptHolds } from './kept-holds.js';
import type { AcquireOptions } from './interfaces/acquire-options.interface.js';
import type { LockHandle } from './interfaces/lock-handle.interface.js';
import type { ReadWriteLock, Semaphore } from './interfaces/lock-kinds.interface.js';
import { RedisLockEvents } from './lock-events.js';
import { LockOwnerScope } from './lock-owner-scope.js';
import { LockWatchdog, runRenewal } from './lock-watchdog.js';
import { MultiLockHandle } from './multi-lock-handle.js';
import { FairLockProtocol } from './protocols/fair-lock.protocol.js';
import { SECTION_HOLD_GONE, type AttemptMode, type AttemptOutcome, type LockProtocol } from './protocols/lock-protocol.interface.js';
import { ReadWriteLockProtocol } from './protocols/read-write-lock.protocol.js';
import { ReentrantLockProtocol } from './protocols/reentrant-lock.protocol.js';
import { RedlockLockProtocol } from './redlock/redlock-lock.protocol.js';
import { RedlockMasters } from './redlock/redlock-masters.js';
import type { RedlockQuorum } from './redlock/redlock-quorum.js';
import { awaitReplicas } from './replica-sync.js';
import { ALL_LOCK_SCRIPTS } from './scripts/all-lock-scripts.js';
import { SemaphoreProtocol } from './protocols/semaphore.protocol.js';

/**
 * Distributed locks on Redis: reentrant within a locked section, kept alive by a watchdog, woken by
 * pub/sub, fenced by a per-key counter. Plain, fair, read/write, semaphore and multi-key locks all
 * share the same waiting, watchdog and transaction behaviour.
 *
 * @example
 * await locks.using(`order:${id}`, async (lock) => {
 *   await payments.charge(order, { fence: lock.fencingToken });
 * });
 */
@Injectable()
export class LockService implements OnApplicationBootstrap, OnApplicationShutdown {
  /** Identifies this module instance among all lock owners. */
  readonly clientId = randomBytes(6).toString('hex');
  private ownerSequence = 0;
  private holdSequence = 0;
  private readonly keySpace: RedisKeySpace;
  private readonly wake: WakeSubscriber;
  private readonly watchdog: LockWatchdog;
  /** Redlock mode: exclusive locks go to this quorum of masters instead of `connection`. */
  private readonly redlock: RedlockQuorum | undefined;
  private readonly keptHolds = new KeptHolds();
  private readonly logger = new Logger('LockService');
  private readonly operations: HeldLockOperations;
  /** @internal Spans around acquires and locked calls (`@WithLock` uses it too). */
  readonly tracing: RedisLockTracing;
  private closed = false;
  /** When each hold began (monotonic ms) and its key pattern; filled only while someone listens for hold times. */
  private readonly holds = new WeakMap<HeldLockHandle, { readonly startedAt: number; readonly keyPattern?: string }>();

  constructor(
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    private readonly connection: RedisConnection,
    private readonly events: RedisLockEvents,
    redlockMasters: RedlockMasters,
    @Inject(TransactionSynchronizer) private readonly transactions: TransactionSynchronizer,
  ) {
    this.keySpace = new RedisKeySpace(config.keyPrefix);
    this.redlock = redlockMasters.quorum;
    this.wake = new WakeSubscriber(this.redlock ? redlockMasters.wakeConnection() : connection);
    this.tracing = config.tracing ? openTelemetryTracing() : NO_TRACING;
    this.watchdog = new LockWatchdog(
      () => this.connection.client,
      config.lock.leaseTime,
      connection.isCluster,
      (error) => this.logger.warn(`Lock renewal failed, will retry: ${(error as Error)?.message ?? error}`),
    );
    this.operations = {
      releaseHeld: (handle) => this.releaseHeld(handle),
      extendHeld: (handle, leaseTime) => this.extendHeld(handle, leaseTime),
      onLost: (handle, error) => this.onLost(handle, error),
    };
  }

  /**
   * Acquires the lock, waiting up to `waitTimeout` for the current holder to let go.
   * An array takes every key, in a canonical order (so `['a','b']` and `['b','a']` cannot deadlock),
   * all or nothing.
   *
   * @throws LockAcquireTimeoutError when still held by another owner after `waitTimeout`
   * @throws LockAcquireAbortedError when `signal` fires first
   * @throws LockNotReplicatedError with `syncReplicas`, when too few replicas confirm in time (the lock is released again)
   * @throws InvalidLockKeyError for an empty, oversized or non-string key
   */
  async acquire(key: string | string[], options?: AcquireOptions): Promise<LockHandle> {
    const resolved = resolveAcquireOptions(options, this.config.lock);
    return (await this.traceAcquire(key, resolved, () => this.acquireKeys(key, resolved, true))) as LockHandle;
  }

  /** Takes the lock if it is free right now; resolves `null` (never waits) if someone else holds it. */
  async tryAcquire(key: string | string[], options?: AcquireOptions): Promise<LockHandle | null> {
    const resolved = resolveAcquireOptions({ ...options, waitTimeout: 0 }, this.config.lock);
    return this.traceAcquire(key, resolved, () => this.acquireKeys(key, resolved, false));
  }

  /**
   * Runs `fn` while holding the lock and releases it afterwards, whether `fn` returns or throws
   * (its error is rethrown untouched). Acquires of the same key inside `fn` re-enter.
   */
  async using<T>(key: string | string[], fn: (lock: LockHandle) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    const handle = await this.acquire(key, options);
    try {
      const run = () => this.runInScope(handle, () => fn(handle));
      return await (this.tracing.enabled ? this.tracing.traceLocked(handle, options?.keyPattern, run) : run());
    } finally {
      await handle.release();
    }
  }

  /**
   * A read/write lock: many readers at once, or one writer. A waiting writer holds back new readers,
   * so readers cannot starve it. Inside a write section the read side re-enters (downgrade); the
   * write side from inside a read section is refused with `LockUpgradeError`.
   */
  readWrite(key: string): ReadWriteLock {
    if (this.redlock) throw new UnsupportedInRedlockModeError('readWrite');
    const keys = this.keySpace.lock(key);
    const side = (mode: 'read' | 'write') => new ReadWriteLockProtocol(keys, mode);
    return {
      read: (options) => this.acquireWith(side('read'), options, true) as Promise<LockHandle>,
      write: (options) => this.acquireWith(side('write'), options, true) as Promise<LockHandle>,
      tryRead: (options) => this.acquireWith(side('read'), { ...options, waitTimeout: 0 }, false),
      tryWrite: (options) => this.acquireWith(side('write'), { ...options, waitTimeout: 0 }, false),
    };
  }

  /**
   * A counting semaphore of `permits` leased permits: at most that many holders at once; a crashed
   * holder's permit comes back when its lease ends. Use the same `permits` everywhere for one key.
   *
   * @example
   * const stock = locks.semaphore(`sku:${sku}`, 3);
   * await using permit = await stock.acquire({ waitTimeout: 2_000 });
   */
  semaphore(key: string, permits: number): Semaphore {
    if (this.redlock) throw new UnsupportedInRedlockModeError('semaphore');
    if (!Number.isInteger(permits) || permits < 1) {
      throw new InvalidOptionsError('permits', `got ${String(permits)}; use a whole number >= 1`);
    }
    const protocol = new SemaphoreProtocol(this.keySpace.semaphore(key), permits);
    return {
      acquire: (options) => this.acquireWith(protocol, options, true) as Promise<LockHandle>,
      tryAcquire: (options) => this.acquireWith(protocol, { ...options, waitTimeout: 0 }, false),
    };
  }

  /** Whether anyone holds the lock (plain, fair or read/write) right now. */
  async isLocked(key: string): Promise<boolean> {
    const owners = this.keySpace.lock(key).owners;
    try {
      if (this.redlock) return await this.redlock.isLocked(owners);
      return (await this.connection.client.exists(owners)) === 1;
    } catch (error) {
      throw toRedisLockError(error, `check lock ${JSON.stringify(key)}`);
    }
  }

  /**
   * Runs `fn` inside the locked section of `handle`: acquires of its key(s) in `fn` re-enter, and
   * `LockContext.current()` returns it. `using()` and `@WithLock` do this for you.
   */
  runInScope<T>(handle: LockHandle, fn: () => T): T {
    const parts = handle instanceof MultiLockHandle ? handle.parts : [handle];
    const held = parts
      .filter((p): p is HeldLockHandle => p instanceof HeldLockHandle && p.protocol.reentrancyKey !== undefined)
      .map((p) => [p.protocol.reentrancyKey!, p.owner] as const);
    return LockOwnerScope.run(handle, held, fn);
  }

  /**
   * Loads the lock scripts into Redis's cache up front. An optimisation only, so it neither delays
   * bootstrap nor fails it (with Redis down it finishes, or fails quietly, in the background).
   */
  onApplicationBootstrap(): void {
    void preloadScripts(this.connection.client, ALL_LOCK_SCRIPTS).catch((error: unknown) =>
      this.logger.debug(`Script preload skipped: ${(error as Error)?.message ?? error}`),
    );
  }

  onApplicationShutdown(): void {
    this.closed = true;
    this.wake.close();
    this.watchdog.stop();
  }

  /** A `lock.acquire` span around `run` when tracing is on. */
  private traceAcquire<T extends HeldLockHandle | LockHandle | null>(
    key: string | string[],
    options: ResolvedAcquireOptions,
    run: () => Promise<T>,
    kind: AcquireTraceInfo['kind'] = options.fair ? 'fair' : 'mutex',
  ): Promise<T> {
    if (!this.tracing.enabled) return run();
    const { keyPattern, waitTimeout } = options;
    const traced = Array.isArray(key) ? [...new Set(key)].sort() : key;
    return this.tracing.traceAcquire({ key: traced, keyPattern, kind, waitTimeout }, run);
  }

  private acquireWith(protocol: LockProtocol, options: AcquireOptions | undefined, wait: boolean) {
    const resolved = resolveAcquireOptions(options, this.config.lock);
    if (this.tracing.enabled) {
      const kind = protocol instanceof ReadWriteLockProtocol ? protocol.mode : protocol instanceof SemaphoreProtocol ? 'semaphore' : 'mutex';
      const run = () => this.observeAcquire(protocol.name, resolved, this.acquireOne(protocol, resolved, wait, protocol.name));
      return this.traceAcquire(protocol.name, resolved, run, kind);
    }
    return this.observeAcquire(protocol.name, resolved, this.acquireOne(protocol, resolved, wait, protocol.name));
  }

  private async acquireKeys(key: string | string[], options: ResolvedAcquireOptions, wait: boolean) {
    if (!Array.isArray(key)) {
      return this.observeAcquire(key, options, this.acquireOne(this.exclusiveProtocol(key, options), options, wait, key));
    }

    const names = [...new Set(key)].sort();
    if (names.length === 0) throw new InvalidLockKeyError(key, 'a multi-key lock needs at least one key');
    const protocols = names.map((name) => this.exclusiveProtocol(name, options)); // validates every key first
    const started = performance.now();
    const parts: LockHandle[] = [];
    try {
      for (const protocol of protocols) {
        const remaining = Math.max(0, options.waitTimeout - (performance.now() - started));
        const partOptions = { ...options, waitTimeout: remaining };
        const part = await this.observeAcquire(protocol.name, partOptions, this.acquireOne(protocol, partOptions, wait, names));
        if (!part) break;
        parts.push(part);
      }
    } catch (error) {
      await this.releaseUnused(parts);
      throw error;
    }
    if (parts.length < protocols.length) {
      await this.releaseUnused(parts);
      return null;
    }
    return new MultiLockHandle(parts);
  }

  private exclusiveProtocol(name: string, options: ResolvedAcquireOptions): LockProtocol {
    const keys = this.keySpace.lock(name);
    if (this.redlock) return RedlockLockProtocol.forAcquire(keys, this.redlock, options);
    return options.fair ? new FairLockProtocol(keys, this.connection.publishCommand) : new ReentrantLockProtocol(keys);
  }

  private async acquireOne(
    protocol: LockProtocol,
    options: ResolvedAcquireOptions,
    wait: boolean,
    reportedKey: string | string[],
  ): Promise<HeldLockHandle | null> {
    if (this.closed) throw new LockServiceClosedError();
    const { signal } = options;
    if (signal?.aborted) throw new LockAcquireAbortedError(reportedKey, signal.reason);
    const enclosingOwner = this.reentrantOwner(protocol);
    if (enclosingOwner !== undefined || protocol.reentrancyKey === undefined) {
      return this.acquireAs(protocol, enclosingOwner, options, wait, reportedKey);
    }
    // A hold this transaction keeps until its end (released earlier in it): re-enter that one.
    const transaction = this.transactions.isActive() ? this.transactions.currentTransaction?.() : undefined;
    const kept = transaction && this.keptHolds.checkOut(transaction, protocol);
    if (!kept) return this.acquireAs(protocol, undefined, options, wait, reportedKey);
    let handle: HeldLockHandle | null = null;
    let lapsed = false;
    try {
      handle = await this.acquireAs(protocol, kept.owner, options, wait, reportedKey);
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
    return this.acquireAs(protocol, undefined, options, wait, reportedKey);
  }

  /**
   * A nested acquire found that its section no longer holds the lock (lease ran out, Redis lost it).
   * It is refused rather than taken afresh under the section's owner: work that read under the
   * section's token would otherwise write under a newer one, a lost update no fence could catch.
   */
  private sectionLost(protocol: LockProtocol): LockLostError {
    const section = LockOwnerScope.currentHandle();
    const parts = section instanceof MultiLockHandle ? section.parts : section ? [section] : [];
    const token = parts.find((part) => part.key === protocol.name)?.fencingToken ?? 'unknown';
    return new LockLostError(protocol.name, token, 'not-owner');
  }

  /** Acquires under `enclosingOwner` (a re-entry) or, when undefined, under a fresh owner id. */
  private async acquireAs(
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
    const started = performance.now();
    const deadline = started + options.waitTimeout;
    const attempt = (mayWait: boolean) =>
      this.attemptBefore(deadline, protocol, owner, options, { willWait: mayWait, reentry, hold }, reportedKey);

    // Local FIFO for the plain lock: while other waiters of this process are parked on the key, a
    // newcomer queues behind them instead of barging in the moment a release frees the key (which
    // made waits of one process unfair and long-tailed).
    const queueBehind =
      willWait && protocol.localFifo && enclosingOwner === undefined ? this.wake.queueBehindFor(protocol.wakeChannel) : 0;
    let sentAt = performance.now();
    let outcome: AttemptOutcome | undefined;
    if (queueBehind === 0) {
      outcome = willWait
        ? await attempt(true)
        : await protocol.attempt(this.connection.client, owner, options.leaseTime, { willWait: false, reentry, hold });
      if (outcome.acquired) return this.handleFor(protocol, outcome.owner ?? owner, hold, outcome.fencingToken, sentAt, options, reportedKey);
      if (outcome.waitMs === SECTION_HOLD_GONE) throw this.sectionLost(protocol);
      if (!wait) return null;
      if (!willWait) throw new LockAcquireTimeoutError(reportedKey, options.waitTimeout);
    }

    // Subscribe before the next try: a release that lands between that try and the wait is then
    // counted by the channel and not lost.
    let channel: WakeChannel | undefined;
    let acquired = false;
    try {
      channel = await this.wake.join(protocol.wakeChannel, protocol.wakesByOwner ? owner : undefined, deadline - performance.now());
      let woken = false;
      if (queueBehind > 0) {
        const reason = await channel.wait(Math.min(queueBehind, deadline - performance.now()), options.signal);
        this.throwIfAborted(reason, reportedKey, options);
        woken = reason === 'woken';
      }
      for (;;) {
        sentAt = performance.now();
        outcome = await attempt(true);
        if (outcome.acquired) {
          acquired = true;
          return await this.handleFor(protocol, outcome.owner ?? owner, hold, outcome.fencingToken, sentAt, options, reportedKey);
        }
        if (outcome.waitMs === SECTION_HOLD_GONE) throw this.sectionLost(protocol);
        woken = await this.waitForTurn(channel, outcome, protocol, deadline, options, reportedKey, woken);
      }
    } finally {
      channel?.leave();
      if (!acquired && protocol.leave) await this.leaveQuietly(protocol, owner);
    }
  }

  /**
   * One attempt that gives up at the deadline even if Redis does not answer (a black-holed
   * connection would otherwise hold the caller far past its waitTimeout). An attempt that still
   * succeeds after that is released at once, so nothing is left held by a caller that gave up.
   */
  private attemptBefore(
    deadline: number,
    protocol: LockProtocol,
    owner: string,
    options: ResolvedAcquireOptions,
    mode: AttemptMode,
    reportedKey: string | string[],
  ): Promise<AttemptOutcome> {
    const attempt = protocol.attempt(this.connection.client, owner, options.leaseTime, mode);
    // One hand-rolled promise rather than Promise.race + finally: this runs on every acquire.
    return new Promise<AttemptOutcome>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(
        () => {
          settled = true;
          reject(new LockAcquireTimeoutError(reportedKey, options.waitTimeout));
          attempt.then(
            // A re-entry too: it ends only its own hold (`mode.hold`), never the enclosing ones.
            (outcome) => outcome.acquired && this.releaseAbandoned(protocol, owner, mode.hold),
            () => undefined,
          );
        },
        Math.max(0, Math.ceil(deadline - performance.now())), // whole ms: see HeldLockHandle.armExpiry
      );
      attempt.then(
        (outcome) => {
          if (settled) return;
          clearTimeout(timer);
          resolve(outcome);
        },
        (error: unknown) => {
          if (settled) return;
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  private releaseAbandoned(protocol: LockProtocol, owner: string, hold: string): void {
    protocol.release(this.connection.client, owner, this.connection.publishCommand, hold).catch((error: unknown) => {
      // Its lease frees it anyway.
      this.logger.debug(`Could not release an abandoned acquire of "${protocol.name}": ${(error as Error)?.message ?? error}`);
    });
  }

  /**
   * Ends in Redis a hold this side already counts as lost. Its lease may have run out here first
   * (a nested hold with its own short lease inside a longer one, or the early margin) or Redis may
   * have been out of reach: Redis may still list it, and a nested hold left there would keep the
   * lock held after its owner's last release. The release ends only this hold (by its id), so it
   * is harmless when Redis dropped it already. In the background: `release()` of a lost handle
   * never waits for, nor fails with, an unreachable Redis.
   */
  private releaseLost(handle: HeldLockHandle): void {
    this.releaseAbandoned(handle.protocol, handle.owner, handle.hold);
  }

  /** The owner id an enclosing section of *this* service holds the lock under, if any. */
  private reentrantOwner(protocol: LockProtocol): string | undefined {
    if (protocol.reentrancyKey === undefined) return undefined;
    const owner = LockOwnerScope.ownerOf(protocol.reentrancyKey);
    return owner?.startsWith(`${this.clientId}:`) ? owner : undefined;
  }

  /** Parks until a release message, the holder's lease end, the deadline, or an abort. */
  private async waitForTurn(
    channel: WakeChannel,
    outcome: AttemptOutcome & { acquired: false },
    protocol: LockProtocol,
    deadline: number,
    options: ResolvedAcquireOptions,
    reportedKey: string | string[],
    wasWoken: boolean,
  ): Promise<boolean> {
    const now = performance.now();
    const remaining = deadline - now;
    if (remaining <= 0) throw new LockAcquireTimeoutError(reportedKey, options.waitTimeout);
    // -2: the key vanished since the try, go again now; -1: a key without expiry, which only a
    // release can free, so only the deadline (or the heartbeat) bounds the wait.
    if (outcome.waitMs === -2) return wasWoken;
    if (outcome.waitMs >= 0) channel.heldUntil(now + outcome.waitMs);
    let sleep = outcome.waitMs === -1 ? remaining : Math.min(outcome.waitMs, remaining);
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

  private async handleFor(
    protocol: LockProtocol,
    owner: string,
    hold: string,
    fencingToken: string,
    sentAt: number,
    options: ResolvedAcquireOptions,
    reportedKey: string | string[],
  ): Promise<HeldLockHandle> {
    if (options.syncReplicas) {
      // Before the handle exists, so a lock the replicas did not confirm is undone directly (not
      // deferred by an enclosing transaction, not watched).
      await awaitReplicas(this.connection.client, protocol.wakeChannel, options.syncReplicas, reportedKey, () =>
        protocol.release(this.connection.client, owner, this.connection.publishCommand, hold),
      );
    }
    const handle = new HeldLockHandle(
      protocol,
      owner,
      hold,
      fencingToken,
      options.leaseTime,
      options.watchdog,
      sentAt,
      this.operations,
    );
    if (options.watchdog) this.watchdog.watch(handle);
    // The caller gave up while the winning try was in flight: hand the lock straight back.
    if (options.signal?.aborted) {
      await handle.release();
      throw new LockAcquireAbortedError(reportedKey, options.signal.reason);
    }
    return handle;
  }

  private async releaseHeld(handle: HeldLockHandle): Promise<void> {
    if (handle.lost) {
      this.forget(handle);
      this.releaseLost(handle);
      return;
    }
    if (this.transactions.isActive()) {
      // Inside a transaction the lock must outlive COMMIT, or a second worker could act on data the
      // first has not committed yet. The watchdog keeps renewing; the lease is the backstop.
      handle.releasePending = true;
      const transaction = handle.protocol.reentrancyKey === undefined ? undefined : this.transactions.currentTransaction?.();
      if (transaction) this.keptHolds.keep(transaction, handle);
      this.transactions.register({
        afterCompletion: () => {
          if (transaction) this.keptHolds.forget(transaction, handle);
          return this.releaseNow(handle);
        },
      });
      return;
    }
    await this.releaseNow(handle);
  }

  private async releaseNow(handle: HeldLockHandle): Promise<void> {
    this.forget(handle);
    if (handle.lost) return this.releaseLost(handle);
    handle.markReleased();
    const result = await handle.protocol.release(this.connection.client, handle.owner, this.connection.publishCommand, handle.hold);
    if (this.events.wants('lock.released')) {
      const hold = this.holds.get(handle);
      this.events.emit('lock.released', {
        key: handle.key,
        keyPattern: hold?.keyPattern,
        fencingToken: handle.fencingToken,
        holdMs: hold && performance.now() - hold.startedAt,
      });
    }
    if (result === -1) {
      this.logger.debug(`Released lock "${handle.key}" was no longer held by its owner (lease ended before release).`);
    }
  }

  private async extendHeld(handle: HeldLockHandle, leaseTime: number): Promise<void> {
    const lease = resolveAcquireOptions({ leaseTime }, this.config.lock).leaseTime;
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
   * Emits `lock.acquired` / `lock.timeout` for one acquire, and notes when the hold began for
   * `lock.released` / `lock.lost`. With no listener it hands the promise back untouched (no
   * clock read, no extra promise).
   */
  private observeAcquire(
    key: string,
    options: ResolvedAcquireOptions,
    pending: Promise<HeldLockHandle | null>,
  ): Promise<HeldLockHandle | null> {
    const events = this.events;
    const timesHold = events.wants('lock.released') || events.wants('lock.lost');
    if (!timesHold && !events.wants('lock.acquired') && !events.wants('lock.timeout')) return pending;
    const { waitTimeout, keyPattern } = options;
    const started = performance.now();
    return pending.then(
      (handle) => {
        const now = performance.now();
        if (handle === null) {
          if (events.wants('lock.timeout')) events.emit('lock.timeout', { key, keyPattern, waitTimeout, waitMs: now - started });
          return handle;
        }
        if (timesHold) this.holds.set(handle, { startedAt: now, keyPattern });
        if (events.wants('lock.acquired')) {
          events.emit('lock.acquired', { key: handle.key, keyPattern, fencingToken: handle.fencingToken, waitMs: now - started });
        }
        return handle;
      },
      (error: unknown) => {
        if (error instanceof LockAcquireTimeoutError && events.wants('lock.timeout')) {
          events.emit('lock.timeout', { key, keyPattern, waitTimeout, waitMs: performance.now() - started });
        }
        throw error;
      },
    );
  }

  private onLost(handle: HeldLockHandle, error: LockLostError): void {
    this.forget(handle);
    this.logger.warn(error.message);
    if (this.events.wants('lock.lost')) {
      const hold = this.holds.get(handle);
      this.events.emit('lock.lost', {
        key: handle.key,
        keyPattern: hold?.keyPattern,
        fencingToken: handle.fencingToken,
        error,
        holdMs: hold && performance.now() - hold.startedAt,
      });
    }
  }

  private forget(handle: HeldLockHandle): void {
    handle.stopTimers();
    if (handle.watchdog) this.watchdog.unwatch(handle);
  }

  private async leaveQuietly(protocol: LockProtocol, owner: string): Promise<void> {
    try {
      await protocol.leave!(this.connection.client, owner, this.connection.publishCommand);
    } catch (error) {
      // The waiter's liveness deadline removes it from the queue anyway.
      this.logger.debug(`Could not leave the wait queue of "${protocol.name}": ${(error as Error)?.message ?? error}`);
    }
  }

  /**
   * @internal Releases holds that were taken but never handed to the caller (the other parts of a
   * multi-key acquire that failed) at once, even inside a transaction: nothing ran under them.
   */
  async releaseUnused(handles: readonly LockHandle[]): Promise<void> {
    await Promise.allSettled(
      handles.flatMap((h) => (h instanceof MultiLockHandle ? h.parts : [h])).map((h) => {
        if (!(h instanceof HeldLockHandle)) return h.release();
        this.keptHolds.undone(h);
        return this.releaseNow(h);
      }),
    );
  }
}
