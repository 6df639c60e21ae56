import type { Logger } from '@nestjs/common';
import { errorMessage } from '../core/errors/error-message.js';
import { LockAcquireTimeoutError } from '../core/errors/lock-acquire-timeout.error.js';
import { LockServiceClosedError } from '../core/errors/lock-service-closed.error.js';
import type { RedisLockError } from '../core/errors/redis-lock.error.js';
import type { RedisLockEvents } from '../core/events/redis-lock-events.js';
import type { RedisOutageLog } from '../core/redis/outage-log.js';
import { settleWithin } from '../core/time/settle-within.js';
import type { LockHandle } from '../lock/interfaces/lock-handle.interface.js';
import type { LockService } from '../lock/lock.service.js';
import type { LeaseDeclaration } from './lease-declaration.js';
import { LeaseKeeper } from './lease-keeper.js';
import { LeadershipSteppedDownError } from '../core/errors/leadership-stepped-down.error.js';
import type { LeadershipHooks } from './leadership-hooks.interface.js';
import { LeadershipLock } from './leadership-lock.js';
import { CAMPAIGN_WAIT_MS } from './scheduling.constants.js';

interface Term {
  readonly lock: LeadershipLock;
  /** Epoch ms (local clock) the term began. */
  readonly since: number;
  readonly stepDown: () => void;
}

/**
 * One instance's campaign for one `@LeaderElection` key: try at bootstrap, then wait for the lock
 * (woken by the lock's pub/sub release, or by its lease running out when the leader died), lead
 * until the lease is lost or this instance steps down, and campaign again.
 */
export class LeaderCampaign {
  private readonly stopping = new AbortController();
  /** Monotonic ms by which a shutdown's step-down must be over (set by `stop`). */
  private stopBy = Number.POSITIVE_INFINITY;
  private term?: Term;
  private loop?: Promise<void>;
  /** Terms this instance has begun. */
  terms = 0;

  constructor(
    readonly declaration: LeaseDeclaration,
    readonly provider: string,
    private readonly instance: LeadershipHooks,
    private readonly locks: LockService,
    private readonly events: RedisLockEvents,
    private readonly logger: Logger,
    /** Where failures to reach Redis go during a known outage (counted there, not warned here). */
    private readonly outages?: RedisOutageLog,
    /** Tells the lock registry that this campaign logs the loss of `handle` itself (one line per loss). */
    private readonly logsLossOf: (handle: LockHandle) => void = () => undefined,
  ) {}

  /**
   * The current term, if this instance leads now: a term whose lease is over by this instance's
   * monotonic clock (the event loop was paused past it) is not reported, even before the election
   * has noticed and ended it.
   */
  get leadership(): { readonly fencingToken: string; readonly since: number } | undefined {
    const term = this.term;
    return term && term.lock.held ? { fencingToken: term.lock.fencingToken, since: term.since } : undefined;
  }

  /** Makes the first try (so an instance that finds the lock free leads when bootstrap returns) and campaigns on in the background. */
  async start(): Promise<void> {
    let first: LockHandle | null = null;
    try {
      const { key, ttl } = this.declaration;
      const askedAt = performance.now();
      first = await this.termGrant(await this.locks.tryAcquire(key, { leaseTime: ttl, keyPattern: key }), askedAt);
    } catch (error) {
      if (!this.outages?.absorb('leader campaigns retried', error)) {
        this.logger.warn(`${this.declaration.location}: first campaign failed, retrying: ${errorMessage(error)}`);
      }
    }
    this.loop = this.campaign(first);
  }

  /**
   * Stops campaigning and steps down if leading; resolves once the lock is released, or at
   * `deadline` (monotonic ms) at the latest: `onLeadershipLost` and the release are not awaited
   * past it (with Redis unreachable the release cannot be confirmed; the lease's ttl frees the lock).
   */
  async stop(deadline = Number.POSITIVE_INFINITY): Promise<void> {
    this.stopBy = deadline;
    this.stopping.abort();
    this.term?.stepDown();
    await this.loop;
  }

  private async campaign(first: LockHandle | null): Promise<void> {
    let handle = first;
    for (;;) {
      if (this.stopping.signal.aborted) {
        if (handle) await this.beforeStopDeadline(handle.release().catch(() => undefined));
        return;
      }
      if (handle) {
        await this.lead(handle);
        handle = null;
      } else {
        handle = await this.waitForLock();
      }
    }
  }

  /**
   * The grant of a call made at `askedAt` (monotonic ms) if it can begin a term, else null (handed
   * back). A term always starts with at least two thirds of its lease left: a grant answered late (a
   * try queued across a reconnection, a stalled link, a wait) may have only a sliver of its lease
   * left by this instance's clock, and a term begun on it would end before its first renewal could
   * land, firing the hooks for a term that never ran. Such a grant is extended first (a lease counted
   * from now); one whose lease is already over, or that Redis no longer holds, begins no term.
   */
  private async termGrant(handle: LockHandle | null, askedAt: number): Promise<LockHandle | null> {
    if (!handle) return null;
    let usable = handle.held;
    if (usable && performance.now() - askedAt > this.declaration.ttl / 3) {
      usable = await handle.extend(this.declaration.ttl).then(
        () => handle.held,
        () => false,
      );
    }
    if (usable) return handle;
    this.logger.debug(`${this.declaration.location}: a grant arrived after its lease ended; campaigning again`);
    // In the background, as for any lost hold: it only cleans up, and wakes the next try at once.
    void handle.release().catch(() => undefined);
    return null;
  }

  private async waitForLock(): Promise<LockHandle | null> {
    const { key, ttl } = this.declaration;
    try {
      const askedAt = performance.now();
      const handle = await this.locks.acquire(key, {
        waitTimeout: CAMPAIGN_WAIT_MS,
        leaseTime: ttl,
        signal: this.stopping.signal,
        keyPattern: key,
      });
      return await this.termGrant(handle, askedAt);
    } catch (error) {
      if (this.stopping.signal.aborted || error instanceof LockAcquireTimeoutError) return null;
      if (error instanceof LockServiceClosedError) {
        this.stopping.abort();
        return null;
      }
      if (!this.outages?.absorb('leader campaigns retried', error)) {
        this.logger.warn(`${this.declaration.location}: campaign failed, retrying: ${errorMessage(error)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, ttl / 3)));
      return null;
    }
  }

  /** One term, from the lock being taken to its release. */
  private async lead(handle: LockHandle): Promise<void> {
    const { key, ttl, location } = this.declaration;
    const startedAt = performance.now();
    this.logsLossOf(handle);
    let over!: (releasedLive: boolean) => void;
    const termOver = new Promise<boolean>((resolve) => (over = resolve));
    let stepDown!: () => void;
    const steppedDown = new Promise<'stepped-down'>((resolve) => (stepDown = () => resolve('stepped-down')));
    const leaseLost = new Promise<'lease-lost'>((resolve) => {
      if (handle.signal.aborted) resolve('lease-lost');
      else handle.signal.addEventListener('abort', () => resolve('lease-lost'), { once: true });
    });
    const lock = new LeadershipLock(handle, ttl, () => {
      stepDown();
      return termOver;
    });
    const keeper = new LeaseKeeper(handle, ttl, (error) => {
      if (!this.outages?.absorb('lease renewals failed', error))
        this.logger.warn(`${location}: renewing the lease failed, will retry: ${errorMessage(error)}`);
    });
    this.term = { lock, since: Date.now(), stepDown };
    // A stop that came while the grant was being confirmed found no term to step down from.
    if (this.stopping.signal.aborted) stepDown();
    this.terms++;
    this.events.emitIfWanted('leadership.acquired', () => ({ key, provider: this.provider, fencingToken: handle.fencingToken }));
    void this.invoke('onLeadershipAcquired', lock);

    const reason = await Promise.race([steppedDown, leaseLost]);
    keeper.stop();
    const error: RedisLockError =
      reason === 'lease-lost' ? (handle.signal.reason as RedisLockError) : new LeadershipSteppedDownError(key, handle.fencingToken);
    lock.end(error);
    this.term = undefined;
    if (reason === 'lease-lost') this.logger.warn(`${location}: leadership lost: ${error.message}`);
    this.events.emitIfWanted('leadership.lost', () => ({
      key,
      provider: this.provider,
      fencingToken: handle.fencingToken,
      reason,
      error,
      heldMs: performance.now() - startedAt,
    }));
    const hookWait = Math.min(ttl, this.timeLeft());
    if (!(await settleWithin(this.invoke('onLeadershipLost', lock), hookWait))) {
      this.logger.warn(`${location}: onLeadershipLost() still runs after ${Math.round(hookWait)} ms; releasing the lock anyway.`);
    }
    // A lost lease's release only cleans up in the background; a step-down wakes the other instances.
    let releasedLive = false;
    const released = handle.release().then(
      (live) => (releasedLive = live),
      (releaseError: unknown) => {
        this.logger.warn(`${location}: releasing the leader lock failed; it ends after its ttl: ${errorMessage(releaseError)}`);
      },
    );
    if (!(await this.beforeStopDeadline(released))) {
      this.logger.warn(`${location}: the leader lock's release is not confirmed by the end of the shutdown; it ends after its ttl.`);
    }
    over(releasedLive);
  }

  /** Ms left before `stop`'s deadline (Infinity while not stopping). */
  private timeLeft(): number {
    return Math.max(0, this.stopBy - performance.now());
  }

  /** Whether `promise` settled before `stop`'s deadline (awaited in full while not stopping). */
  private async beforeStopDeadline(promise: Promise<unknown>): Promise<boolean> {
    const left = this.timeLeft();
    if (left === Number.POSITIVE_INFINITY) {
      await promise;
      return true;
    }
    return settleWithin(promise, left);
  }

  /** Calls a hook; never rejects (a hook's error is logged). */
  private invoke(name: keyof LeadershipHooks, lock: LeadershipLock): Promise<void> {
    const hook = this.instance[name];
    if (typeof hook !== 'function') return Promise.resolve();
    const failed = (error: unknown) => {
      this.logger.error(`${this.provider}.${name}() failed: ${(error as Error)?.stack ?? errorMessage(error)}`);
    };
    try {
      return Promise.resolve(hook.call(this.instance, lock)).then(() => undefined, failed);
    } catch (error) {
      failed(error);
      return Promise.resolve();
    }
  }
}
