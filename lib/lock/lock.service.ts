import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { errorMessage } from '../core/errors/error-message.js';
import { InvalidLockKeyError } from '../core/errors/invalid-lock-key.error.js';
import { RedisKeySpace } from '../core/keys/redis-key-space.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import { toRedisLockError } from '../core/redis/redis-errors.js';
import type { AcquireOptions, ResolvedAcquireOptions } from './interfaces/acquire-options.interface.js';
import type { LockHandle } from './interfaces/lock-handle.interface.js';
import type { HeldLockHandle } from './held-lock-handle.js';
import type { ReadWriteLock, Semaphore } from './interfaces/lock-kinds.interface.js';
import { LockAcquirer } from './lock-acquirer.js';
import { LockHoldRegistry } from './lock-hold-registry.js';
import { LockObserver } from './lock-observer.js';
import { lockProtocolFactory, type LockProtocolFactory } from './lock-protocol-factory.js';
import { HeldLockFrames } from './held-lock-frames.js';
import { acquireAllOrNothing, lockNamesOf } from './multi-key-acquire.js';
import { MultiLockHandle } from './multi-lock-handle.js';
import type { LockProtocol } from './protocols/lock-protocol.interface.js';
import { RedlockMasters } from './redlock/redlock-masters.js';
import { AcquireOptionsResolver } from './resolve-acquire-options.js';
import { ALL_LOCK_SCRIPTS } from './kinds/all-lock-kinds.js';
import { FAIR } from './kinds/fair/fair.kind.js';
import { MUTEX } from './kinds/mutex/mutex.kind.js';
import { READ_WRITE } from './kinds/read-write/read-write.kind.js';
import { SEMAPHORE } from './kinds/semaphore/semaphore.kind.js';
import { AbandonedHolds } from './abandoned-holds.js';
import { TransactionHolds } from './transaction-holds.js';

/**
 * Distributed locks on Redis: reentrant within a locked section, kept alive by a watchdog, woken by
 * pub/sub, fenced by a per-key counter. Plain, fair, read/write, semaphore and multi-key locks all
 * share the same waiting, watchdog and transaction behaviour.
 *
 * Inject it anywhere once `RedisLockModule` is imported; Nest builds it (its constructor is internal).
 *
 * @hideconstructor
 *
 * @example
 * import { Injectable } from '@nestjs/common';
 * import { LockService } from 'nestjs-redis-lock';
 *
 * \@Injectable()
 * export class OrdersService {
 *   constructor(private readonly locks: LockService, private readonly payments: PaymentsService) {}
 *
 *   async pay(id: string): Promise<void> {
 *     // one holder at a time across every instance; released when the callback settles
 *     await this.locks.using(`order:${id}`, async (lock) => {
 *       await this.payments.charge(id, { fence: lock.fencingToken });
 *     });
 *   }
 * }
 */
@Injectable()
export class LockService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('LockService');
  private readonly protocols: LockProtocolFactory;
  private readonly acquirer: LockAcquirer;
  private readonly acquireOptions: AcquireOptionsResolver;

  /** @internal Nest builds it: inject the class instead (its parameters are the module's internal pieces). */
  constructor(
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    private readonly connection: RedisConnection,
    redlockMasters: RedlockMasters,
    keySpace: RedisKeySpace,
    private readonly holds: LockHoldRegistry,
    private readonly observer: LockObserver,
    transactions: TransactionHolds,
    private readonly abandoned: AbandonedHolds,
  ) {
    this.protocols = lockProtocolFactory(keySpace, connection, redlockMasters);
    this.acquirer = new LockAcquirer(connection, this.protocols.wakeConnection, this.holds, transactions, abandoned, this.logger);
    this.acquireOptions = new AcquireOptionsResolver(config.lock);
  }

  /** Identifies this module instance among all lock owners. */
  get clientId(): string {
    return this.acquirer.clientId;
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
  acquire(key: string | string[], options?: AcquireOptions): Promise<LockHandle> {
    // Not async: every layer of an acquire hands its promise straight on (an async wrapper costs
    // extra promises and turns per call); a synchronous throw still becomes a rejection.
    try {
      const resolved = this.acquireOptions.resolve(options);
      if (!this.observer.tracingEnabled) return this.acquireKeys(key, resolved, true) as Promise<LockHandle>;
      return this.observer.traceAcquire(key, resolved, () => this.acquireKeys(key, resolved, true)) as Promise<LockHandle>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Takes the lock if it is free right now; resolves `null` (never waits) if someone else holds it. */
  tryAcquire(key: string | string[], options?: AcquireOptions): Promise<LockHandle | null> {
    try {
      const resolved = this.acquireOptions.resolve(options, false);
      return this.observer.traceAcquire(key, resolved, () => this.acquireKeys(key, resolved, false));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Runs `fn` while holding the lock and releases it afterwards, whether `fn` returns or throws
   * (its error is rethrown untouched). Acquires of the same key inside `fn` re-enter.
   */
  async using<T>(key: string | string[], fn: (lock: LockHandle) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    const handle = await this.acquire(key, options);
    try {
      return await this.observer.traceLocked(handle, options?.keyPattern, () => this.runInScope(handle, () => fn(handle)));
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
    const read = this.protocols.of(READ_WRITE, key, 'read'); // an invalid key throws here
    const write = () => this.protocols.of(READ_WRITE, key, 'write');
    return {
      read: (options) => this.acquireWith(read, options, true, 'read/write locks') as Promise<LockHandle>,
      write: (options) => this.acquireWith(write(), options, true, 'read/write locks') as Promise<LockHandle>,
      tryRead: (options) => this.acquireWith(read, options, false, 'read/write locks'),
      tryWrite: (options) => this.acquireWith(write(), options, false, 'read/write locks'),
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
    const protocol = this.protocols.of(SEMAPHORE, key, permits);
    return {
      acquire: (options) => this.acquireWith(protocol, options, true, 'semaphores') as Promise<LockHandle>,
      tryAcquire: (options) => this.acquireWith(protocol, options, false, 'semaphores'),
    };
  }

  /** Whether anyone holds the lock (plain, fair or read/write) right now. */
  async isLocked(key: string): Promise<boolean> {
    const locked = this.protocols.isLocked(key); // an invalid key throws here, unwrapped
    try {
      return await locked;
    } catch (error) {
      throw toRedisLockError(error, `check lock ${JSON.stringify(key)}`);
    }
  }

  /**
   * Runs `fn` inside the locked section of `handle`: acquires of its key(s) in `fn` re-enter, and
   * `LockContext.current()` returns it. `using()` and `@WithLock` do this for you.
   */
  runInScope<T>(handle: LockHandle, fn: () => T): T {
    return HeldLockFrames.run(handle, fn);
  }

  /**
   * Loads the lock scripts into Redis's cache up front. An optimisation only, so it neither delays
   * bootstrap nor fails it (with Redis down it finishes, or fails quietly, in the background).
   */
  onApplicationBootstrap(): void {
    void this.connection
      .loadScripts(ALL_LOCK_SCRIPTS)
      .catch((error: unknown) => this.logger.debug(`Script preload skipped: ${errorMessage(error)}`));
  }

  /**
   * Nest lifecycle hook: fails the acquires still waiting and refuses new ones (`LockServiceClosedError`), and
   * stops renewing the leases of held locks.
   */
  onApplicationShutdown(): void {
    this.acquirer.close();
    this.holds.stop();
    this.abandoned.stop();
  }

  /**
   * A refused option rejects the returned promise, as `acquire()` does, rather than throwing.
   * `notFair`: the lock kind (plural) that has no FIFO mode, which refuses `fair: true` (as
   * `@WithLock` does outside the exclusive mode).
   */
  private acquireWith(protocol: LockProtocol, options: AcquireOptions | undefined, wait: boolean, notFair?: string) {
    let resolved: ResolvedAcquireOptions;
    try {
      if (notFair !== undefined && options?.fair === true) {
        const advice = 'leave `fair` out, or use a fair exclusive lock (`acquire(key, { fair: true })`)';
        throw new InvalidOptionsError('fair', `${notFair} have no fair (FIFO) mode; ${advice}`);
      }
      resolved = this.acquireOptions.resolve(options, wait);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const run = () => this.observer.observeAcquire(protocol.name, resolved, this.acquirer.acquire(protocol, resolved, wait, protocol.name));
    return this.observer.tracingEnabled ? this.observer.traceAcquire(protocol.name, resolved, run, protocol.side ?? protocol.kind) : run();
  }

  private acquireKeys(
    key: string | string[],
    options: ResolvedAcquireOptions,
    wait: boolean,
  ): Promise<HeldLockHandle | MultiLockHandle | null> {
    if (Array.isArray(key)) return this.acquireSeveral(key, options, wait);
    try {
      return this.observer.observeAcquire(key, options, this.acquirer.acquire(this.exclusive(key, options), options, wait, key));
    } catch (error) {
      return Promise.reject(error); // an invalid key
    }
  }

  private async acquireSeveral(key: string[], options: ResolvedAcquireOptions, wait: boolean) {
    const names = lockNamesOf(key);
    if (names.length === 0) throw new InvalidLockKeyError(key, 'a multi-key lock needs at least one key');
    const protocols = names.map((name) => this.exclusive(name, options)); // validates every key first
    const parts = await acquireAllOrNothing(protocols, options.waitTimeout, {
      acquireOne: (protocol, remaining) => {
        const partOptions = { ...options, waitTimeout: remaining! };
        return this.observer.observeAcquire(protocol.name, partOptions, this.acquirer.acquire(protocol, partOptions, wait, names));
      },
      releaseUnused: (held) => this.holds.releaseUnused(held),
    });
    return parts && new MultiLockHandle(parts);
  }

  /** The exclusive lock on `name`: plain, or fair with `fair: true`. */
  private exclusive(name: string, options: ResolvedAcquireOptions): LockProtocol {
    return this.protocols.of(options.fair ? FAIR : MUTEX, name, undefined, options);
  }
}
