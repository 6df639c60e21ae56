import { Inject, Injectable, Logger } from '@nestjs/common';
import { errorMessage } from '../core/errors/error-message.js';
import { LockAcquireTimeoutError } from '../core/errors/lock-acquire-timeout.error.js';
import { REDIS_LOCK_TRACING, type LockedSpan, type RedisLockTracing } from '../core/tracing/redis-lock-tracing.js';
import type { LockHandle } from '../lock/interfaces/lock-handle.interface.js';
import { LockSections } from '../lock/lock-sections.js';
import type { ResolvedWithLockOptions } from './with-lock-options.js';

/** A lock section being entered: either a fresh hold, or one that an enclosing section already covers. */
export interface LockSection {
  readonly handle: LockHandle;
  /** False when an enclosing section of the same service already holds these keys: nothing to release. */
  readonly owned: boolean;
  /** The key the section names (one, or several). */
  readonly key: string | string[];
  readonly options: ResolvedWithLockOptions;
}

/**
 * Runs the locked sections of `@WithLock` methods and `@WithRequestLock` handlers over the module's
 * `LockSections` (which take the locks through its `LockService`): enter (take the lock, or run
 * inside an enclosing section that holds it), run the body inside the section, leave (release),
 * and trace the hold. One per module instance; Nest
 * injects it into `RequestLockInterceptor`, and through `REDIS_LOCK_INTERNALS` into every instance of
 * a class with `@WithLock` methods.
 * It is the only piece that takes and releases locks for decorators; `HeldLockFrames` only records
 * what the call chain holds, and `LockContext` is the public read of the innermost of those holds.
 */
@Injectable()
export class DecoratorLockRunner {
  private readonly logger = new Logger('WithLock');

  constructor(
    private readonly sections: LockSections,
    @Inject(REDIS_LOCK_TRACING) private readonly tracing: RedisLockTracing,
  ) {}

  /**
   * Takes the lock for a section, unless an enclosing section of the same module instance already
   * holds every key in a mode that covers this one (then the section runs inside that hold, so a
   * route lock plus a method lock on the same key, or a locked method calling itself, hold it once).
   *
   * @returns the section, or the `LockAcquireTimeoutError` when the lock was not free in time
   */
  async enter(key: string | string[], options: ResolvedWithLockOptions): Promise<LockSection | LockAcquireTimeoutError> {
    // An enclosing hold of several keys is reused in the order this section names them.
    const named = Array.isArray(key) ? [...new Set(key)] : [key];
    const covering = this.sections.covering(named, options.mode);
    if (covering) return { handle: covering, owned: false, key, options };
    try {
      const handle = await this.sections.acquire(key, options.mode, options.acquire);
      if (handle) return { handle, owned: true, key, options };
    } catch (error) {
      if (error instanceof LockAcquireTimeoutError) return error;
      throw error;
    }
    return new LockAcquireTimeoutError(key, options.acquire.waitTimeout ?? 0);
  }

  /** Runs `fn` as the body of `section`: `LockContext.current()`, nested acquires and nested sections see the lock. */
  runInside<T>(section: LockSection, fn: () => T): T {
    const taken = section.owned ? { key: section.key, mode: section.options.mode } : undefined;
    return this.sections.run(section.handle, fn, taken);
  }

  /** Releases a section's hold if it took one. Never throws: a failed release is logged, the lease ends it. */
  async leave(section: LockSection): Promise<void> {
    if (!section.owned) return;
    try {
      await section.handle.release();
    } catch (error) {
      this.logger.warn(`Releasing lock "${section.handle.key}" failed; it ends when its lease runs out: ${errorMessage(error)}`);
    }
  }

  /** What the section resolves to when the lock was not free in time (`onLocked`). */
  unavailable(options: ResolvedWithLockOptions, error: LockAcquireTimeoutError, key: string | string[], args: readonly unknown[]): unknown {
    if (options.onLocked === 'skip') return undefined;
    if (options.onLocked === 'throw') throw error;
    return options.onLocked({ key, args, error });
  }

  /**
   * A `lock.held` span over a section the caller runs by hand (the interceptor's handler stream), or
   * `undefined` when tracing is off or an enclosing section holds the lock (its span covers this one).
   */
  startHeldSpan(section: LockSection): LockedSpan | undefined {
    if (!this.tracing.enabled || !section.owned) return undefined;
    return this.tracing.startLocked(section.handle, section.options.acquire.keyPattern, methodOf(section.options));
  }

  /**
   * The whole section for promise-returning callers (`@WithLock`): take the lock, run `body` under
   * it, release. `body`'s result and errors pass through untouched; a sync `body` is fine.
   */
  async run<T>(
    key: string | string[],
    options: ResolvedWithLockOptions,
    args: readonly unknown[],
    body: () => T,
  ): Promise<Awaited<T> | unknown> {
    const section = await this.enter(key, options);
    if (section instanceof LockAcquireTimeoutError) return await this.unavailable(options, section, key, args);
    try {
      const run = () => this.runInside(section, body);
      // A section inside an enclosing hold of the same keys is part of that hold's span.
      if (!this.tracing.enabled || !section.owned) return await run();
      return await this.tracing.traceLocked(section.handle, options.acquire.keyPattern, run, methodOf(options));
    } finally {
      await this.leave(section);
    }
  }
}

/** The decorated method or handler (`Class.method()`), the span's `code.function`. */
function methodOf(options: ResolvedWithLockOptions): string {
  return options.location.replace(/^@With\w+ on /, '');
}
