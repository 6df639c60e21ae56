import { LockAcquireTimeoutError } from '../core/errors/lock-acquire-timeout.error.js';
import { RedisConnectionError } from '../core/errors/redis-connection.error.js';
import { RedisReachability } from '../core/redis/reachability.js';
import type { RedisConnection } from '../core/redis/redis-connection.js';
import type { AbandonedHolds } from './abandoned-holds.js';
import { DeadlineList } from './deadline-list.js';
import type { ResolvedAcquireOptions } from './interfaces/acquire-options.interface.js';
import type { HeldLockHandle } from './held-lock-handle.js';
import type { LockHoldRegistry } from './lock-hold-registry.js';
import type { AttemptMode, AttemptOutcome, AttemptRefusal, LockProtocol } from './protocols/lock-protocol.interface.js';

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

/** One acquire call: what every try of it shares. */
export interface AcquireCall {
  readonly protocol: LockProtocol;
  readonly owner: string;
  /** This call's hold id (AttemptMode.hold), the same for all its tries. */
  readonly hold: string;
  readonly reentry: boolean;
  readonly options: ResolvedAcquireOptions;
  /** Monotonic ms after which the call fails with LockAcquireTimeoutError. */
  readonly deadline: number;
  readonly reportedKey: string | string[];
  /** Set once a try of the call was granted (its hold is then the handle's, even if issuing it fails). */
  granted: boolean;
}


/**
 * The tries of acquire calls, each bounded by its call's deadline: a try Redis leaves unanswered
 * fails at the deadline (naming Redis, not contention, when the connection is silent), and a try
 * whose outcome the caller will never receive is undone in the background (`AbandonedHolds`); a
 * granted try becomes its handle (`LockHoldRegistry.issue`).
 * One per `LockAcquirer`: the deadlines of all tries in flight share one timer.
 */
export class BoundedTries {
  /** The hung-call deadline of every try in flight, on one timer (a try's deadline is its call's). */
  private readonly deadlines = new DeadlineList(true);

  constructor(
    private readonly connection: RedisConnection,
    private readonly abandoned: AbandonedHolds,
    /** Where a granted try becomes its handle. */
    private readonly holds: Pick<LockHoldRegistry, 'issue'>,
  ) {}

  /**
   * A try that does not wait (`tryAcquire`, or `waitTimeout` 0), sent at `sentAt`: a grant becomes
   * its handle, a refusal goes to `refused`; a try that failed without an answer is undone (see
   * `undoIfUnknown`).
   */
  once<T>(call: AcquireCall, sentAt: number, refused: (refusal: AttemptRefusal) => T): Promise<HeldLockHandle | Awaited<T>> {
    const { protocol, owner, hold, options, reentry } = call;
    return protocol.attempt(this.connection.client, owner, options.leaseTime, { willWait: false, reentry, hold }).then(
      (outcome) => this.settle(call, outcome, sentAt, refused),
      (error: unknown) => {
        this.undoIfUnknown(call, error, sentAt);
        throw error;
      },
    ) as Promise<HeldLockHandle | Awaited<T>>;
  }

  /**
   * One attempt that gives up at the deadline even if Redis does not answer (a black-holed
   * connection would otherwise hold the caller far past its waitTimeout). An attempt that still
   * succeeds after that is released at once, so nothing is left held by a caller that gave up.
   * `waiting`: the caller already waits for this lock (see AttemptMode.waiting). A grant becomes its
   * handle (the lease counted from `leaseFrom`); a refusal goes to `refused`, inside the same promise
   * (its throw rejects it).
   */
  before<T>(
    call: AcquireCall,
    waiting: boolean,
    leaseFrom: number,
    refused: (refusal: AttemptRefusal) => T,
  ): Promise<HeldLockHandle | Awaited<T>> {
    const { protocol, owner, hold, options, deadline, reportedKey } = call;
    const mode: AttemptMode = { willWait: true, reentry: call.reentry, hold, waiting };
    const sentAt = performance.now();
    const attempt = protocol.attempt(this.connection.client, owner, options.leaseTime, mode);
    // One hand-rolled promise rather than Promise.race + finally: this runs on every acquire.
    return new Promise<HeldLockHandle | Awaited<T>>((resolve, reject) => {
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
          timer = this.deadlines.add(due, expire);
          return;
        }
        settled = true;
        reject(this.unansweredTryError(protocol, sentAt, reportedKey) ?? new LockAcquireTimeoutError(reportedKey, options.waitTimeout));
        attempt.then(
          // A re-entry too: it ends only its own hold (`mode.hold`), never the enclosing ones.
          (outcome) => outcome.acquired && this.abandoned.releaseAbandoned(protocol, owner, hold),
          (error: unknown) => this.undoIfUnknown(call, error, sentAt),
        );
      };
      let timer = this.deadlines.add(due, expire);
      attempt.then(
        (outcome) => {
          if (settled) return;
          this.deadlines.cancel(timer);
          try {
            resolve(this.settle(call, outcome, leaseFrom, refused) as HeldLockHandle | Awaited<T>);
          } catch (error) {
            reject(error);
          }
        },
        (error: unknown) => {
          if (settled) return;
          this.deadlines.cancel(timer);
          this.undoIfUnknown(call, error, sentAt);
          reject(error);
        },
      );
    });
  }

  /** A grant's handle (its lease counted from `leaseFrom`), or what `refused` makes of a refusal. */
  private settle<T>(call: AcquireCall, outcome: AttemptOutcome, leaseFrom: number, refused: (refusal: AttemptRefusal) => T) {
    if (!outcome.acquired) return refused(outcome);
    call.granted = true;
    return this.holds.issue(call, outcome.owner ?? call.owner, outcome.fencingToken, leaseFrom);
  }

  /**
   * Why a try sent at `sentAt` is still unanswered when its call's wait ends, if the reason is
   * Redis rather than contention: the connection is down, or nothing at all came back on it since
   * the try was sent, `SILENT_TRY_MS` ago or more. Undefined otherwise (the lock was held at the last
   * answer, or the reply is merely slow). Redlock tries go to the masters, not this connection.
   */
  private unansweredTryError(protocol: LockProtocol, sentAt: number, reportedKey: string | string[]): RedisConnectionError | undefined {
    const reachability = this.connection.reachability;
    if (!reachability || protocol.settlesOwnTries) return undefined;
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
   * there in the background (a re-entry's own hold only; see AbandonedHolds.releaseUnknown), so
   * the lock is not left held by nobody until its lease ends. An error Redis answered with is
   * known to have taken nothing. Redlock tries go to its masters, which settle their own.
   */
  undoIfUnknown(call: AcquireCall, error: unknown, sentAt: number): void {
    if (!(error instanceof RedisConnectionError) || RedisReachability.neverSent(error) || call.protocol.settlesOwnTries) return;
    this.abandoned.releaseUnknown(call.protocol, call.owner, call.hold, sentAt + call.options.leaseTime);
  }
}

/** A key or keys as an error message names them. */
export function formatKey(key: string | readonly string[]): string {
  return typeof key === 'string' ? JSON.stringify(key) : `[${key.map((k) => JSON.stringify(k)).join(', ')}]`;
}
