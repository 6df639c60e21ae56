import { randomBytes } from 'node:crypto';
import type { Logger } from '@nestjs/common';
import { LockAcquireAbortedError } from '../core/errors/lock-acquire-aborted.error.js';
import { LockAcquireTimeoutError } from '../core/errors/lock-acquire-timeout.error.js';
import { LockLostError } from '../core/errors/lock-lost.error.js';
import { LockServiceClosedError } from '../core/errors/lock-service-closed.error.js';
import type { RedisConnection } from '../core/redis/redis-connection.js';
import { WakeSubscriber, type WakeChannel, type WakeReason } from './wake-subscriber.js';
import type { WakeConnectionSource } from './protocols/lock-protocol.interface.js';
import type { ResolvedAcquireOptions } from './interfaces/acquire-options.interface.js';
import type { HeldLockHandle } from './held-lock-handle.js';
import type { LockHoldRegistry } from './lock-hold-registry.js';
import { HeldLockFrames } from './held-lock-frames.js';
import { MultiLockHandle } from './multi-lock-handle.js';
import { SECTION_HOLD_GONE, type AttemptMode, type AttemptOutcome, type LockProtocol } from './protocols/lock-protocol.interface.js';
import { awaitReplicas } from './replica-sync.js';
import { DeadlineList } from './deadline-list.js';
import { errorMessage } from '../core/errors/error-message.js';
import { RedisConnectionError } from '../core/errors/redis-connection.error.js';
import { toRedisLockError } from '../core/redis/redis-errors.js';
import { RedisReachability } from '../core/redis/reachability.js';
import { RedlockLockProtocol } from './redlock/redlock-lock.protocol.js';

/**
 * A try still unanswered at its call's deadline after this long (ms), with not a byte from Redis on
 * the connection since it was sent, says Redis is not answering: the wait ended for that, not for
 * contention. A shorter one may just be a slow reply.
 */
const SILENT_TRY_MS = 200;

/**
 * A try's deadline that fires this much later than due says this process itself was stalled (a
 * busy or paused event loop, as RedisReachability judges its timers): the try's reply may be
 * waiting unread, since timers run before the I/O of the turn.
 */
const STALLED_MS = 50;
/** Longest wait before a stalled try's deadline is checked again (pending I/O is read meanwhile). */
const STALL_RECHECK_MS = 100;

/** The continuation of a try whose outcome is wanted as such. */
const asIs = (outcome: AttemptOutcome): AttemptOutcome => outcome;

/** One acquire call: what every try of it shares. */
interface AcquireCall {
  readonly protocol: LockProtocol;
  readonly owner: string;
  /** This call's hold id (AttemptMode.hold), the same for all its tries. */
  readonly hold: string;
  readonly reentry: boolean;
  readonly options: ResolvedAcquireOptions;
  /** Monotonic ms after which the call fails with LockAcquireTimeoutError. */
  readonly deadline: number;
  readonly reportedKey: string | string[];
}

/**
 * Takes one lock of any kind: tries, and while it is held elsewhere waits for a release message on
 * its wake channel (one shared subscriber), for the holder's lease end, the deadline or an abort,
 * whichever comes first. Nothing polls at a fixed interval; a kind with a `heartbeat` wakes that
 * often to keep its place in line.
 *
 * Owner ids are `<clientId>:<n>`, one per acquire; a nested acquire inside a lock section of this
 * acquirer re-enters under the section's owner id instead.
 */
export class LockAcquirer {
  /** Identifies this module instance among all lock owners. */
  readonly clientId = randomBytes(6).toString('hex');
  private ownerSequence = 0;
  private holdSequence = 0;
  private readonly wake: WakeSubscriber;
  /** The hung-call deadline of every try in flight, on one timer (a try's deadline is its call's). */
  private readonly tryDeadlines = new DeadlineList(true);
  private closed = false;
  private readonly stopWatching: () => void;

  constructor(
    private readonly connection: RedisConnection,
    wakeConnection: WakeConnectionSource,
    private readonly holds: LockHoldRegistry,
    private readonly logger: Logger,
  ) {
    this.wake = new WakeSubscriber(wakeConnection);
    // Parked waiters wait for a message, not a reply: once Redis is unreachable past the bound
    // they try again at once, and that try fails fast with RedisConnectionError.
    this.stopWatching = connection.onUnreachable(() => this.wake.wakeAll());
  }

  /**
   * Acquires `protocol`'s lock. `wait` false resolves `null` when it is held elsewhere; `wait` true
   * waits up to `options.waitTimeout` and then throws `LockAcquireTimeoutError` for `reportedKey`.
   */
  acquire(protocol: LockProtocol, options: ResolvedAcquireOptions, wait: boolean, reportedKey: string | string[]): Promise<HeldLockHandle | null> {
    // Not async (hot path): the promise of acquireAs is handed on as is.
    if (this.closed) return Promise.reject(new LockServiceClosedError());
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(new LockAcquireAbortedError(reportedKey, signal.reason));
    const enclosingOwner = this.reentrantOwner(protocol);
    if (enclosingOwner !== undefined || protocol.reentrancyKey === undefined || !this.holds.inTransaction()) {
      return this.acquireAs(protocol, enclosingOwner, options, wait, reportedKey);
    }
    return this.holds.acquireInTransaction(protocol, (owner) => this.acquireAs(protocol, owner, options, wait, reportedKey));
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
    const call: AcquireCall = { protocol, owner, hold, reentry, options, deadline, reportedKey };

    // Local FIFO for the plain lock: while other waiters of this process are parked on the key, a
    // newcomer queues behind them instead of barging in the moment a release frees the key.
    const queueBehind =
      willWait && protocol.localFifo && enclosingOwner === undefined ? this.wake.queueBehindFor(protocol.wakeChannel) : 0;
    if (queueBehind > 0) return this.waitForLock(call, queueBehind);
    const afterFirstTry = (outcome: AttemptOutcome): HeldLockHandle | Promise<HeldLockHandle> | null => {
      if (outcome.acquired) return this.handleFor(call, outcome, sentAt);
      if (outcome.waitMs === SECTION_HOLD_GONE) throw this.sectionLost(protocol);
      if (!wait) return null;
      if (!willWait) throw new LockAcquireTimeoutError(reportedKey, options.waitTimeout);
      return this.waitForLock(call, 0);
    };
    // The first try's outcome is handled inside the deadline's promise (one promise, not three).
    return willWait
      ? this.attemptBefore(call, false, afterFirstTry)
      : protocol.attempt(this.connection.client, owner, options.leaseTime, { willWait: false, reentry, hold }).then(afterFirstTry, (error: unknown) => {
          this.undoIfUnknown(call, error, sentAt);
          throw error;
        });
  }

  /** Waits for the lock after a refused first try (or, with `queueBehind`, behind this process's parked waiters first). */
  private async waitForLock(call: AcquireCall, queueBehind: number): Promise<HeldLockHandle> {
    const { protocol, owner, options, deadline, reportedKey } = call;
    // Subscribe before the next try: a release that lands between that try and the wait is then
    // counted by the channel and not lost.
    let channel: WakeChannel | undefined;
    let acquired = false;
    try {
      channel = await this.wake.join(protocol.wakeChannel, protocol.wakesByOwner ? owner : undefined, deadline - performance.now()).catch((error: unknown) => {
        throw toRedisLockError(error, `wait for lock ${formatKey(reportedKey)}`, this.connection.reachability?.cause);
      });
      let woken = false;
      if (queueBehind > 0) {
        const reason = await channel.wait(Math.min(queueBehind, deadline - performance.now()), options.signal);
        this.throwIfAborted(reason, reportedKey, options);
        woken = reason === 'woken';
      }
      for (;;) {
        const sentAt = performance.now();
        const outcome = await this.attemptBefore(call, true, asIs);
        if (outcome.acquired) {
          acquired = true;
          return await this.handleFor(call, outcome, sentAt);
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
   * `waiting`: the caller already waits for this lock (see AttemptMode.waiting). `next` turns the
   * outcome into the result, inside the same promise (its throw rejects it).
   */
  private attemptBefore<T>(call: AcquireCall, waiting: boolean, next: (outcome: AttemptOutcome) => T | PromiseLike<T>): Promise<T> {
    const { protocol, owner, hold, options, deadline, reportedKey } = call;
    const mode: AttemptMode = { willWait: true, reentry: call.reentry, hold, waiting };
    const sentAt = performance.now();
    const attempt = protocol.attempt(this.connection.client, owner, options.leaseTime, mode);
    // One hand-rolled promise rather than Promise.race + finally: this runs on every acquire.
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      // Rounded up to the next whole ms: the try never times out before its deadline. Lateness is
      // counted from when the timer could first fire (a try sent after its call's deadline: at once).
      let due = Math.max(Math.ceil(deadline) + 1, sentAt);
      // The verdict at the deadline is only given by a timer that fired on time: one that fired late
      // (this process was stalled past the deadline) is checked again after a short wait during which
      // pending I/O is read, so a reply that arrived during the stall settles the try as answered
      // (granted or refused) instead of failing it as unanswered or timed out. The try never times
      // out before its deadline; after a stall, a little after it.
      const expire = () => {
        const late = performance.now() - due;
        if (late > STALLED_MS) {
          due = performance.now() + Math.min(late, STALL_RECHECK_MS);
          timer = this.tryDeadlines.add(due, expire);
          return;
        }
        settled = true;
        reject(this.unansweredTryError(protocol, sentAt, reportedKey) ?? new LockAcquireTimeoutError(reportedKey, options.waitTimeout));
        attempt.then(
          // A re-entry too: it ends only its own hold (`mode.hold`), never the enclosing ones.
          (outcome) => outcome.acquired && this.holds.releaseAbandoned(protocol, owner, hold),
          (error: unknown) => this.undoIfUnknown(call, error, sentAt),
        );
      };
      let timer = this.tryDeadlines.add(due, expire);
      attempt.then(
        (outcome) => {
          if (settled) return;
          this.tryDeadlines.cancel(timer);
          try {
            resolve(next(outcome));
          } catch (error) {
            reject(error);
          }
        },
        (error: unknown) => {
          if (settled) return;
          this.tryDeadlines.cancel(timer);
          this.undoIfUnknown(call, error, sentAt);
          reject(error);
        },
      );
    });
  }

  /**
   * Why a try sent at `sentAt` is still unanswered when its call's wait ends, if the reason is
   * Redis rather than contention: the connection is down, or nothing at all came back on it since
   * the try was sent, `SILENT_TRY_MS` ago or more. Undefined otherwise (the lock was held at the last
   * answer, or the reply is merely slow). Redlock tries go to the masters, not this connection.
   */
  private unansweredTryError(protocol: LockProtocol, sentAt: number, reportedKey: string | string[]): RedisConnectionError | undefined {
    const reachability = this.connection.reachability;
    if (!reachability || protocol instanceof RedlockLockProtocol) return undefined;
    const action = `acquire lock ${formatKey(reportedKey)}`;
    if (reachability.isDown) return reachability.failure(action);
    const silentFor = performance.now() - sentAt;
    if (silentFor < SILENT_TRY_MS || reachability.heardSince(sentAt)) return undefined;
    return new RedisConnectionError(
      `Redis did not answer while trying to ${action}: no reply for ${Math.round(silentFor)} ms when the wait ended ` +
        '(so it is unknown whether the lock is held). Check that Redis is up and reachable, then retry.',
    );
  }

  /**
   * A try that failed without an answer from Redis (it was left unanswered, or the connection
   * dropped with it sent) may still run, or have run, in Redis: its hold, if granted, is undone
   * there in the background (a re-entry's own hold only; see LockHoldRegistry.releaseUnknown), so
   * the lock is not left held by nobody until its lease ends. An error Redis answered with is
   * known to have taken nothing. Redlock tries go to its masters, which settle their own.
   */
  private undoIfUnknown(call: AcquireCall, error: unknown, sentAt: number): void {
    if (!(error instanceof RedisConnectionError) || RedisReachability.neverSent(error) || call.protocol instanceof RedlockLockProtocol) return;
    this.holds.releaseUnknown(call.protocol, call.owner, call.hold, sentAt + call.options.leaseTime);
  }

  /** The owner id an enclosing section of *this* acquirer holds the lock under, if any. */
  private reentrantOwner(protocol: LockProtocol): string | undefined {
    if (protocol.reentrancyKey === undefined) return undefined;
    const owner = HeldLockFrames.ownerOf(protocol.reentrancyKey);
    return owner?.startsWith(`${this.clientId}:`) ? owner : undefined;
  }

  /**
   * A nested acquire found that its section no longer holds the lock (lease ran out, Redis lost it).
   * It is refused rather than taken afresh under the section's owner: work that read under the
   * section's token would otherwise write under a newer one, a lost update no fence could catch.
   */
  private sectionLost(protocol: LockProtocol): LockLostError {
    const section = HeldLockFrames.currentHandle();
    const parts = section instanceof MultiLockHandle ? section.parts : section ? [section] : [];
    const token = parts.find((part) => part.key === protocol.name)?.fencingToken ?? 'unknown';
    return new LockLostError(protocol.name, token, 'not-owner');
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

  /** The handle of a granted try; a promise only when replicas must confirm or the caller gave up meanwhile. */
  private handleFor(call: AcquireCall, outcome: AttemptOutcome & { acquired: true }, sentAt: number): HeldLockHandle | Promise<HeldLockHandle> {
    const { protocol, options } = call;
    const owner = outcome.owner ?? call.owner;
    if (!options.syncReplicas) return this.issue(call, owner, outcome.fencingToken, sentAt);
    // Before the handle exists, so a lock the replicas did not confirm is undone directly (not
    // deferred by an enclosing transaction, not watched).
    return awaitReplicas(this.connection, protocol.wakeChannel, options.syncReplicas, call.reportedKey, () =>
      protocol.release(this.connection.client, owner, this.connection.publishCommand, call.hold),
    ).then(() => this.issue(call, owner, outcome.fencingToken, sentAt));
  }

  private issue(call: AcquireCall, owner: string, fencingToken: string, sentAt: number): HeldLockHandle | Promise<never> {
    const { options } = call;
    const handle = this.holds.issue(call.protocol, owner, call.hold, fencingToken, sentAt, options);
    // The caller gave up while the winning try was in flight: hand the lock straight back.
    if (options.signal?.aborted) {
      const reason: unknown = options.signal.reason;
      return handle.release().then(() => {
        throw new LockAcquireAbortedError(call.reportedKey, reason);
      });
    }
    return handle;
  }

  private async leaveQuietly(protocol: LockProtocol, owner: string): Promise<void> {
    try {
      await protocol.leave!(this.connection.client, owner, this.connection.publishCommand);
    } catch (error) {
      // The waiter's liveness deadline removes it from the queue anyway.
      this.logger.debug(`Could not leave the wait queue of "${protocol.name}": ${errorMessage(error)}`);
    }
  }
}

function formatKey(key: string | readonly string[]): string {
  return typeof key === 'string' ? JSON.stringify(key) : `[${key.map((k) => JSON.stringify(k)).join(', ')}]`;
}
