import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { LockAcquireAbortedError } from '../errors/lock-acquire-aborted.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { InvalidLockKeyError } from '../errors/invalid-lock-key.error';
import type { LockLostError } from '../errors/lock-lost.error';
import { LockNotHeldError } from '../errors/lock-not-held.error';
import { LockServiceClosedError } from '../errors/lock-service-closed.error';
import { RedisKeySpace, type LockKeys } from '../keys/redis-key-space';
import type { RedisLockConfig } from '../options/redis-lock-config';
import { RedisConnection } from '../redis/redis-connection';
import { WakeSubscriber, type WakeChannel } from '../redis/wake-subscriber';
import { REDIS_LOCK_CONFIG } from '../redis-lock.constants';
import { defaultUnitOfWork } from '../transaction/async-local-unit-of-work';
import type { TransactionSynchronizer } from '../transaction/transaction-synchronizer.interface';
import { resolveAcquireOptions, type ResolvedAcquireOptions } from './acquire-options';
import type { AcquireOptions } from './interfaces/acquire-options.interface';
import type { LockHandle } from './interfaces/lock-handle.interface';
import { RedisLockEvents } from './lock-events';
import { LockOwnerScope } from './lock-owner-scope';
import { LockWatchdog } from './lock-watchdog';
import { MultiLockHandle } from './multi-lock-handle';
import { ReentrantLockHandle, type HeldLockOperations } from './reentrant-lock-handle';
import { acquireLockScript } from './scripts/acquire-lock.lua';
import { extendLockScript } from './scripts/extend-lock.lua';
import { releaseLockScript } from './scripts/release-lock.lua';

type AttemptResult = { acquired: true; token: string; sentAt: number } | { acquired: false; pttl: number };

/**
 * Distributed locks on Redis: reentrant within a locked section, kept alive by a watchdog, woken by
 * pub/sub, fenced by a per-key counter.
 *
 * @example
 * await locks.using(`order:${id}`, async (lock) => {
 *   await payments.charge(order, { fence: lock.fencingToken });
 * });
 */
@Injectable()
export class LockService implements OnApplicationShutdown {
  /** Identifies this process (this module instance) among all lock owners. */
  readonly clientId = randomBytes(6).toString('hex');
  private ownerSequence = 0;
  private readonly keySpace: RedisKeySpace;
  private readonly wake: WakeSubscriber;
  private readonly watchdog: LockWatchdog;
  private readonly transactions: TransactionSynchronizer;
  private readonly logger = new Logger('LockService');
  private readonly operations: HeldLockOperations;
  private closed = false;

  constructor(
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    private readonly connection: RedisConnection,
    private readonly events: RedisLockEvents,
  ) {
    this.keySpace = new RedisKeySpace(config.keyPrefix);
    this.wake = new WakeSubscriber(connection);
    this.transactions = config.transactions ?? defaultUnitOfWork;
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
   * @throws InvalidLockKeyError for an empty, oversized or non-string key
   */
  async acquire(key: string | string[], options?: AcquireOptions): Promise<LockHandle> {
    const resolved = resolveAcquireOptions(options, this.config.lock);
    const handle = await this.acquireAny(key, resolved, true);
    return handle as LockHandle;
  }

  /** Takes the lock if it is free right now; resolves `null` (never waits) if someone else holds it. */
  async tryAcquire(key: string | string[], options?: AcquireOptions): Promise<LockHandle | null> {
    const resolved = resolveAcquireOptions({ ...options, waitTimeout: 0 }, this.config.lock);
    return this.acquireAny(key, resolved, false);
  }

  /**
   * Runs `fn` while holding the lock and releases it afterwards, whether `fn` returns or throws
   * (its error is rethrown untouched). Acquires of the same key inside `fn` re-enter.
   */
  async using<T>(key: string | string[], fn: (lock: LockHandle) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    const handle = await this.acquire(key, options);
    try {
      return await this.runInScope(handle, () => fn(handle));
    } finally {
      await handle.release();
    }
  }

  /** Whether anyone holds the lock right now. */
  async isLocked(key: string): Promise<boolean> {
    const keys = this.keySpace.lock(key);
    return (await this.connection.client.exists(keys.owners)) === 1;
  }

  /**
   * Runs `fn` inside the locked section of `handle`: acquires of its key(s) in `fn` re-enter.
   * `using()` and `@WithLock` do this for you.
   */
  runInScope<T>(handle: LockHandle, fn: () => T): T {
    const parts = handle instanceof MultiLockHandle ? handle.parts : [handle];
    const held = parts
      .filter((p): p is ReentrantLockHandle => p instanceof ReentrantLockHandle)
      .map((p) => [p.keys.owners, p.owner] as const);
    return LockOwnerScope.run(handle, held, fn);
  }

  onApplicationShutdown(): void {
    this.closed = true;
    this.wake.close();
    this.watchdog.stop();
  }

  private async acquireAny(
    key: string | string[],
    options: ResolvedAcquireOptions,
    wait: boolean,
  ): Promise<LockHandle | null> {
    if (!Array.isArray(key)) return this.acquireOne(this.keySpace.lock(key), options, wait, key);
    const names = [...new Set(key)].sort();
    if (names.length === 0) throw new InvalidLockKeyError(key, 'a multi-key lock needs at least one key');
    const allKeys = names.map((name) => this.keySpace.lock(name));
    const started = performance.now();
    const parts: LockHandle[] = [];
    try {
      for (const keys of allKeys) {
        const remaining = Math.max(0, options.waitTimeout - (performance.now() - started));
        const part = await this.acquireOne(keys, { ...options, waitTimeout: remaining }, wait, names);
        if (!part) break;
        parts.push(part);
      }
    } catch (error) {
      await this.releaseQuietly(parts);
      throw error;
    }
    if (parts.length < allKeys.length) {
      await this.releaseQuietly(parts);
      return null;
    }
    return new MultiLockHandle(parts);
  }

  private async acquireOne(
    keys: LockKeys,
    options: ResolvedAcquireOptions,
    wait: boolean,
    reportedKey: string | string[],
  ): Promise<ReentrantLockHandle | null> {
    if (this.closed) throw new LockServiceClosedError();
    const { signal } = options;
    if (signal?.aborted) throw new LockAcquireAbortedError(reportedKey, signal.reason);
    const owner = LockOwnerScope.ownerOf(keys.owners) ?? `${this.clientId}:${++this.ownerSequence}`;
    const started = performance.now();

    let attempt = await this.attempt(keys, owner, options.leaseTime);
    if (attempt.acquired) return this.handleFor(keys, owner, attempt, options, reportedKey);
    if (!wait || options.waitTimeout === 0) return null;

    // Subscribe before the next try: a release that lands between that try and the wait is then
    // counted by the channel and not lost.
    const deadline = started + options.waitTimeout;
    const channel = await this.wake.join(keys.wakeChannel);
    try {
      for (;;) {
        attempt = await this.attempt(keys, owner, options.leaseTime);
        if (attempt.acquired) return this.handleFor(keys, owner, attempt, options, reportedKey);
        await this.waitForTurn(channel, attempt.pttl, deadline, options, reportedKey);
      }
    } finally {
      channel.leave();
    }
  }

  /** Parks until a release message, the holder's lease end, the deadline, or an abort. */
  private async waitForTurn(
    channel: WakeChannel,
    pttl: number,
    deadline: number,
    options: ResolvedAcquireOptions,
    reportedKey: string | string[],
  ): Promise<void> {
    const remaining = deadline - performance.now();
    if (remaining <= 0) throw new LockAcquireTimeoutError(reportedKey, options.waitTimeout);
    // pttl -2: the key vanished since the try, go again now; -1: a key without expiry (only a
    // release can free it), so only the deadline bounds the wait.
    if (pttl === -2) return;
    const sleep = pttl === -1 ? remaining : Math.min(pttl, remaining);
    const reason = await channel.wait(sleep, options.signal);
    if (reason !== 'aborted') return;
    if (this.closed) throw new LockServiceClosedError();
    throw new LockAcquireAbortedError(reportedKey, options.signal?.reason);
  }

  private async attempt(keys: LockKeys, owner: string, leaseTime: number): Promise<AttemptResult> {
    const sentAt = performance.now();
    const [ok, value] = await acquireLockScript.run<[number, string | number]>(
      this.connection.client,
      [keys.owners, keys.fence],
      [owner, leaseTime],
    );
    return ok === 1 ? { acquired: true, token: String(value), sentAt } : { acquired: false, pttl: Number(value) };
  }

  private async handleFor(
    keys: LockKeys,
    owner: string,
    attempt: AttemptResult & { acquired: true },
    options: ResolvedAcquireOptions,
    reportedKey: string | string[],
  ): Promise<ReentrantLockHandle> {
    const handle = new ReentrantLockHandle(
      keys,
      owner,
      attempt.token,
      options.leaseTime,
      options.watchdog,
      attempt.sentAt,
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

  private async releaseHeld(handle: ReentrantLockHandle): Promise<void> {
    if (handle.signal.aborted) {
      // Lost already: Redis holds nothing of ours to release.
      this.forget(handle);
      return;
    }
    if (this.transactions.isActive()) {
      // Inside a transaction the lock must outlive COMMIT, or a second worker could act on data the
      // first has not committed yet. The watchdog keeps renewing; the lease is the backstop.
      handle.releasePending = true;
      this.transactions.register({ afterCompletion: () => this.releaseNow(handle) });
      return;
    }
    await this.releaseNow(handle);
  }

  private async releaseNow(handle: ReentrantLockHandle): Promise<void> {
    this.forget(handle);
    if (handle.signal.aborted) return;
    handle.markReleased();
    const result = await releaseLockScript.run<number>(
      this.connection.client,
      [handle.keys.owners, handle.keys.wakeChannel],
      [handle.owner, this.connection.publishCommand],
    );
    if (result === -1) {
      this.logger.debug(`Released lock "${handle.key}" was no longer held by its owner (lease ended before release).`);
    }
  }

  private async extendHeld(handle: ReentrantLockHandle, leaseTime: number): Promise<void> {
    const lease = resolveAcquireOptions({ leaseTime }, this.config.lock).leaseTime;
    if (!handle.held && !handle.releasePending) throw new LockNotHeldError(handle.key, 'extend');
    const sentAt = performance.now();
    const extended = await extendLockScript.run<number>(this.connection.client, [handle.keys.owners], [handle.owner, lease]);
    if (extended !== 1) {
      handle.markLost('not-owner');
      throw new LockNotHeldError(handle.key, 'extend');
    }
    handle.leaseConfirmed(sentAt, lease);
  }

  private onLost(handle: ReentrantLockHandle, error: LockLostError): void {
    this.forget(handle);
    this.logger.warn(error.message);
    this.events.emit('lock.lost', { key: handle.key, fencingToken: handle.fencingToken, error });
  }

  private forget(handle: ReentrantLockHandle): void {
    handle.stopTimers();
    if (handle.watchdog) this.watchdog.unwatch(handle);
  }

  private async releaseQuietly(handles: LockHandle[]): Promise<void> {
    await Promise.allSettled(handles.map((h) => h.release()));
  }
}
