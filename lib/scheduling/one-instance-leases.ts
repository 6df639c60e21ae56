import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { errorMessage } from '../core/errors/error-message.js';
import { LockNotHeldError } from '../core/errors/lock-not-held.error.js';
import { RedisConnectionError } from '../core/errors/redis-connection.error.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import { RedisLockEvents } from '../core/events/redis-lock-events.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { settleWithin } from '../core/time/settle-within.js';
import type { LockHandle } from '../lock/interfaces/lock-handle.interface.js';
import { LockHoldRegistry } from '../lock/lock-hold-registry.js';
import { LockService } from '../lock/lock.service.js';
import type { LeaseDeclaration } from './lease-declaration.js';
import { LeaseKeeper } from './lease-keeper.js';
import { MAX_HANDOVER_GUARD_MS } from './scheduling.constants.js';

/** The lease of one `@OnOneInstance` method: its declaration and the method it guards. Internal. */
export interface OneInstanceDeclaration extends LeaseDeclaration {
  /** `ClassName.methodName`, as reported by `one-instance.skipped`. */
  readonly method: string;
}

/** An `@OnOneInstance` lease this instance holds now. */
interface OneInstanceLease {
  /** The lease key. */
  readonly key: string;
  /** The lease's fencing token. */
  readonly fencingToken: string;
  /** Since when this instance holds it (epoch ms, local clock). */
  readonly since: number;
}

/** The lock a run of an `@OnOneInstance` method holds while it runs. */
export function runLockKey(key: string): string {
  return `${key}:run`;
}

interface LeaseEntry {
  readonly declaration: LeaseDeclaration;
  handle?: LockHandle;
  keeper?: LeaseKeeper;
  since?: number;
  /** A take of the lease in flight, shared by the calls that overlap it. */
  taking?: Promise<LockHandle | null>;
  /** Monotonic time of the last call, and the shortest gap seen between two calls. */
  lastCallAt?: number;
  shortestGap?: number;
  /** Monotonic time the last run on this instance started. */
  lastRunAt?: number;
  readonly runs: Set<Promise<unknown>>;
  /** Calls between their lease check and the start of their run (or their decision not to run). */
  readonly starting: Set<Promise<unknown>>;
}

/**
 * The leases of the `@OnOneInstance` methods of one application: which instance runs their calls.
 *
 * A method's lease is the lock named by its key, taken with the method's `ttl` on the first call
 * that finds it free and renewed every `ttl / 3` while the application lives. The instance holding
 * it runs the calls; every other instance resolves them `undefined` at once. A run holds a second
 * lock (`<key>:run`), so a handover can never overlap two runs: the new holder's calls are skipped
 * until the previous holder's run has finished (or its lock lapsed after `ttl`).
 *
 * @hideconstructor
 */
@Injectable()
export class OneInstanceLeases implements BeforeApplicationShutdown {
  private readonly logger = new Logger('OnOneInstance');
  private readonly entries = new Map<string, LeaseEntry>();
  private closing = false;

  constructor(
    private readonly locks: LockService,
    private readonly registry: LockHoldRegistry,
    private readonly events: RedisLockEvents,
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    private readonly connection: RedisConnection,
  ) {}

  /**
   * Runs `body` if this instance holds (or can take) the lease of `declaration.key` and no run of
   * it is in progress anywhere; resolves `undefined` without running it otherwise. That includes a
   * call that cannot reach Redis to take or confirm the lease (it fails with RedisConnectionError):
   * an instance cut off from Redis cannot know it holds the lease, so it does not run the call, as
   * one that knows another instance holds it does not (`one-instance.skipped`, reason
   * `'not-owner'`); it is counted in the connection's outage log rather than rejected, so a
   * scheduler calling it each tick logs nothing per tick. Other failures still reject the call.
   */
  async run<T>(declaration: OneInstanceDeclaration, body: () => T): Promise<Awaited<T> | undefined> {
    if (this.closing) return undefined;
    const entry = this.entryOf(declaration);
    this.noteCall(entry);
    // A call that came before shutdown began is seen through: the hand-back waits until it has
    // started its run (then for the run) or decided not to, so it is neither dropped halfway nor
    // left running on a lease already handed on.
    const starting = this.start(entry, declaration, body);
    const decided = starting.then(
      () => undefined,
      () => undefined,
    );
    entry.starting.add(decided);
    void decided.then(() => entry.starting.delete(decided));
    const started = await starting;
    return started ? started.running : undefined;
  }

  /** Confirms or takes the lease, then takes the run lock and starts the run; `undefined` when the call does not run here. */
  private async start<T>(
    entry: LeaseEntry,
    declaration: OneInstanceDeclaration,
    body: () => T,
  ): Promise<{ running: Promise<Awaited<T>> } | undefined> {
    const lease = await this.unlessUnreachable(declaration, this.holdLease(entry));
    if (!lease) return this.closing ? undefined : this.skipped(declaration, 'not-owner');

    const { key, ttl } = declaration;
    const run = await this.unlessUnreachable(
      declaration,
      this.locks.tryAcquire(runLockKey(key), { leaseTime: ttl, keyPattern: runLockKey(key) }),
    );
    if (run === undefined) return this.skipped(declaration, 'not-owner');
    if (!run) return this.skipped(declaration, 'still-running');
    if (!lease.held) {
      // Lost while the run lock was being taken (a stall): the lease is given back, so another
      // instance may run this call; running it here too could run it twice.
      await run.release().catch(() => undefined);
      return this.skipped(declaration, 'not-owner');
    }
    entry.lastRunAt = performance.now();
    const keeper = new LeaseKeeper(run, ttl, (error) => this.renewalFailed(runLockKey(key), error));
    const running = (async (): Promise<Awaited<T>> => {
      try {
        return (await this.locks.runInScope(run, body)) as Awaited<T>;
      } finally {
        keeper.stop();
        await run.release().catch((error: unknown) => {
          if (this.connection.outages.absorb('run lock releases failed', error)) return;
          this.logger.warn(`Releasing the run lock of "${key}" failed; it ends after its ttl: ${errorMessage(error)}`);
        });
      }
    })();
    const settled = running.then(
      () => undefined,
      () => undefined,
    );
    entry.runs.add(settled);
    void settled.then(() => entry.runs.delete(settled));
    return { running };
  }

  /** The leases this instance holds now (for dashboards and health checks). */
  owned(): OneInstanceLease[] {
    return [...this.entries.values()]
      .filter((entry) => entry.handle?.held)
      .map((entry) => ({ key: entry.declaration.key, fencingToken: entry.handle!.fencingToken, since: entry.since! }));
  }

  /** Whether this instance holds the lease of `key` now (as far as it knows: the next call confirms it in Redis). */
  holds(key: string): boolean {
    return this.entries.get(key)?.handle?.held ?? false;
  }

  /**
   * Stops running calls and hands every lease back, so another instance takes over at its next
   * call instead of after `ttl`. Calls that came before are seen through, and runs in progress are
   * awaited first (up to `ttl`); and a lease
   * ends no sooner than half the gap between two calls (at most `MAX_HANDOVER_GUARD_MS`) after the
   * last call, so the other instances' timers for that same tick, which fire a few ms later, still
   * find it held and do not run the tick again: its lease in Redis is set to lapse then
   * (`LockHoldRegistry.releaseAfter`), so shutdown does not wait for that moment.
   *
   * All of it within `delayQueue.shutdownTimeout` (the module's shutdown budget), Redis up or down:
   * what is not confirmed by then is left to the leases' ttl.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    const deadline = performance.now() + this.config.delayQueue.shutdownTimeout;
    await Promise.all([...this.entries.values()].map((entry) => this.handBack(entry, deadline)));
  }

  private entryOf(declaration: LeaseDeclaration): LeaseEntry {
    let entry = this.entries.get(declaration.key);
    if (!entry) {
      entry = { declaration, runs: new Set(), starting: new Set() };
      this.entries.set(declaration.key, entry);
    } else if (entry.declaration.ttl !== declaration.ttl) {
      this.logger.warn(
        `${declaration.location} shares the lease "${declaration.key}" with ${entry.declaration.location} but sets another ttl; ` +
          `the lease keeps ${entry.declaration.ttl} ms. Give the methods different keys, or the same ttl.`,
      );
    }
    return entry;
  }

  private noteCall(entry: LeaseEntry): void {
    const now = performance.now();
    if (entry.lastCallAt !== undefined) {
      const gap = now - entry.lastCallAt;
      entry.shortestGap = Math.min(entry.shortestGap ?? gap, gap);
    }
    entry.lastCallAt = now;
  }

  /** The lease, confirmed in Redis for this call; `null` when another instance holds it. */
  private async holdLease(entry: LeaseEntry): Promise<LockHandle | null> {
    const held = entry.handle;
    if (held?.held) {
      try {
        // Confirms in Redis that the lease is still ours (a pause longer than ttl may have cost it)
        // and restarts its ttl.
        await held.extend(entry.declaration.ttl);
        // A stall can count the lease lost while the extend was in flight: then it is not ours to run on.
        if (held.held) return held;
      } catch (error) {
        if (!(error instanceof LockNotHeldError)) throw error;
      }
    }
    entry.taking ??= this.takeLease(entry).finally(() => (entry.taking = undefined));
    return entry.taking;
  }

  private async takeLease(entry: LeaseEntry): Promise<LockHandle | null> {
    const { key, ttl } = entry.declaration;
    // Looking first keeps the other instances' every call from counting as a lock timeout.
    if (await this.locks.isLocked(key)) return null;
    const handle = await this.locks.tryAcquire(key, { leaseTime: ttl, keyPattern: key });
    if (!handle) return null;
    if (this.closing || !handle.held) {
      // Not held: granted, but answered after its lease was over by this instance's clock (a
      // stalled link): no lease to report or run on; handed back so the next call takes it afresh.
      await handle.release().catch(() => undefined);
      return null;
    }
    const since = Date.now();
    const startedAt = performance.now();
    this.registry.ownerLogsLoss(handle);
    entry.handle = handle;
    entry.since = since;
    entry.keeper = new LeaseKeeper(handle, ttl, (error) => this.renewalFailed(key, error));
    handle.signal.addEventListener(
      'abort',
      () => {
        if (entry.handle !== handle) return;
        entry.handle = undefined;
        entry.keeper?.stop();
        // Counted lost here does not mean gone from Redis: a stalled event loop fires the lease's
        // expiry (a margin before its end) in the same turn as the renewal it sent on waking, and
        // that renewal keeps the lease in Redis for another ttl. Left there, it would make every
        // instance skip its calls until it lapsed; given back (only if still ours), the next call
        // anywhere, this instance's included, takes it.
        void handle.release().catch(() => undefined);
        this.logger.warn(`Lost the lease of "${key}"; the next call on any instance takes it over. ${errorMessage(handle.signal.reason)}`);
        this.events.emitIfWanted('one-instance.lost', () => ({
          key,
          fencingToken: handle.fencingToken,
          reason: 'lease-lost',
          heldMs: performance.now() - startedAt,
        }));
      },
      { once: true },
    );
    this.events.emitIfWanted('one-instance.acquired', () => ({ key, fencingToken: handle.fencingToken }));
    return handle;
  }

  private async handBack(entry: LeaseEntry, deadline: number): Promise<void> {
    const left = () => Math.max(0, deadline - performance.now());
    if (entry.taking)
      await settleWithin(
        entry.taking.catch(() => undefined),
        left(),
      );
    const handle = entry.handle;
    if (!handle?.held) return;
    const { key, ttl } = entry.declaration;
    await settleWithin(Promise.all(entry.starting), left());
    const runsWait = Math.min(ttl, left());
    if (!(await settleWithin(Promise.all(entry.runs), runsWait))) {
      this.logger.warn(
        `A run of "${key}" is still going after ${Math.round(runsWait)} ms; handing the lease back anyway (its run lock stays held).`,
      );
    }
    const guard = Math.min(MAX_HANDOVER_GUARD_MS, (entry.shortestGap ?? Infinity) / 2);
    // The lease stays held in Redis until the guard's end (what keeps a tick from running twice),
    // set to lapse then rather than waited for and released: shutdown does not wait for it.
    const guardLeft = Math.max(0, (entry.lastCallAt ?? -Infinity) + guard - performance.now());
    entry.handle = undefined;
    entry.keeper?.stop();
    const heldMs = entry.since === undefined ? 0 : Date.now() - entry.since;
    let failure: unknown;
    const released = this.registry
      .releaseAfter(handle, guardLeft)
      .catch((error: unknown) => (failure = error ?? new Error('release failed')));
    if (!(await settleWithin(released, left())) || failure !== undefined) {
      const why = failure === undefined ? 'not confirmed by the end of the shutdown' : `failed: ${errorMessage(failure)}`;
      this.logger.warn(`Handing back the lease of "${key}" ${why}; another instance takes over after its ttl.`);
      return;
    }
    this.events.emitIfWanted('one-instance.lost', () => ({
      key,
      fencingToken: handle.fencingToken,
      reason: 'handed-back',
      heldMs,
    }));
  }

  /**
   * What `step` resolves with; `undefined` when it failed to reach Redis (the call is not run: see
   * `run`), counted in the outage log, or warned about in one line when no outage is known.
   */
  private async unlessUnreachable<R>(declaration: OneInstanceDeclaration, step: Promise<R>): Promise<R | undefined> {
    try {
      return await step;
    } catch (error) {
      if (!(error instanceof RedisConnectionError)) throw error;
      if (!this.connection.outages.absorb('@OnOneInstance calls skipped', error)) {
        this.logger.warn(`${declaration.method}: not run, Redis is out of reach (the lease cannot be confirmed): ${errorMessage(error)}`);
      }
      return undefined;
    }
  }

  private skipped(declaration: OneInstanceDeclaration, reason: 'not-owner' | 'still-running'): undefined {
    this.events.emitIfWanted('one-instance.skipped', () => ({ key: declaration.key, method: declaration.method, reason }));
    return undefined;
  }

  private renewalFailed(key: string, error: unknown): void {
    if (this.connection.outages.absorb('lease renewals failed', error)) return;
    this.logger.warn(`Renewing "${key}" failed, will retry: ${errorMessage(error)}`);
  }
}
