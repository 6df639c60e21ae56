import { Inject, Injectable } from '@nestjs/common';
import { LockAcquireTimeoutError } from '../core/errors/lock-acquire-timeout.error.js';
import type { LockLostError } from '../core/errors/lock-lost.error.js';
import { REDIS_LOCK_TRACING, type AcquireTraceInfo, type RedisLockTracing } from '../core/tracing/redis-lock-tracing.js';
import type { ResolvedAcquireOptions } from './interfaces/acquire-options.interface.js';
import type { HeldLockHandle } from './held-lock-handle.js';
import type { LockHandle } from './interfaces/lock-handle.interface.js';
import { RedisLockEvents } from '../core/events/redis-lock-events.js';
import { lockNamesOf } from './multi-key-acquire.js';

/** When a hold began (monotonic ms) and the key pattern it was taken under. */
interface HoldStart {
  readonly startedAt: number;
  readonly keyPattern?: string;
}

/**
 * Lock events (`lock.acquired`, `lock.timeout`, `lock.released`, `lock.lost`) and spans
 * (`lock.acquire`, `lock.held`). Costs nothing when nobody listens and tracing is off: no clock
 * read, no extra promise, no entry in the hold-start map.
 */
@Injectable()
export class LockObserver {
  /** Filled only while someone listens for hold times (`lock.released` / `lock.lost`). */
  private readonly holdStarts = new WeakMap<HeldLockHandle, HoldStart>();

  constructor(
    private readonly events: RedisLockEvents,
    @Inject(REDIS_LOCK_TRACING) private readonly tracing: RedisLockTracing,
  ) {}

  /** Whether spans are recorded (callers skip building span info when not). */
  get tracingEnabled(): boolean {
    return this.tracing.enabled && this.tracing.recording !== false;
  }

  /**
   * A `lock.acquire` span around `run` when tracing is on; a multi-key lock is named by its sorted
   * keys. `kind`: the name of the lock's kind (LOCK_KINDS), or a read/write lock's side; by default the
   * exclusive lock's (plain or fair).
   */
  traceAcquire<T extends LockHandle | null>(
    key: string | string[],
    options: ResolvedAcquireOptions,
    run: () => Promise<T>,
    kind: AcquireTraceInfo['kind'] = options.fair ? 'fair' : 'mutex',
  ): Promise<T> {
    if (!this.tracingEnabled) return run();
    const { keyPattern, waitTimeout } = options;
    const traced = Array.isArray(key) ? lockNamesOf(key) : key;
    return this.tracing.traceAcquire({ key: traced, keyPattern, kind, waitTimeout }, run);
  }

  /** A `lock.held` span around the locked call `fn` when tracing is on. */
  traceLocked<T>(handle: LockHandle, keyPattern: string | undefined, fn: () => T): T {
    return this.tracingEnabled ? this.tracing.traceLocked(handle, keyPattern, fn) : fn();
  }

  /**
   * Emits `lock.acquired` / `lock.timeout` for one acquire of `key`, and notes when the hold began
   * for `released` / `lost`. With no listener it hands `pending` back untouched.
   */
  observeAcquire(key: string, options: ResolvedAcquireOptions, pending: Promise<HeldLockHandle | null>): Promise<HeldLockHandle | null> {
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
        if (timesHold) this.holdStarts.set(handle, { startedAt: now, keyPattern });
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

  /** `handle` was released in Redis. */
  released(handle: HeldLockHandle): void {
    if (!this.events.wants('lock.released')) return;
    const start = this.holdStarts.get(handle);
    this.events.emit('lock.released', {
      key: handle.key,
      keyPattern: start?.keyPattern,
      fencingToken: handle.fencingToken,
      holdMs: start && performance.now() - start.startedAt,
    });
  }

  /** `handle`'s lease was lost. */
  lost(handle: HeldLockHandle, error: LockLostError): void {
    if (!this.events.wants('lock.lost')) return;
    const start = this.holdStarts.get(handle);
    this.events.emit('lock.lost', {
      key: handle.key,
      keyPattern: start?.keyPattern,
      fencingToken: handle.fencingToken,
      error,
      holdMs: start && performance.now() - start.startedAt,
    });
  }
}
