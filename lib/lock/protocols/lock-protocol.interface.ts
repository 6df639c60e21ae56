import type { RedisClient } from '../../core/options/redis-lock-config.js';
import type { RedisTransport } from '../../core/redis/redis-transport.js';
import type { RedisScript } from '../../core/redis/redis-script.js';

/** Outcome of one acquire attempt. */
export type AttemptOutcome =
  | {
      readonly acquired: true;
      readonly fencingToken: string;
      /**
       * The owner id the hold is recorded under, when the protocol gives each try its own (Redlock:
       * a late answer to one try must never count for another). The handle, its re-entries and its
       * release use it; absent, the owner id passed to `attempt`.
       */
      readonly owner?: string;
    }
  /**
   * `waitMs`: longest the caller may sleep before the holder's lease could have ended (-1: no bound,
   * -2: try again now, SECTION_HOLD_GONE: a nested acquire whose section no longer holds the lock).
   */
  | { readonly acquired: false; readonly waitMs: number };

/**
 * `waitMs` of a nested acquire (`AttemptMode.reentry`) that found its section's owner no longer
 * holding the lock: the section's hold was lost, and the lock is never taken afresh under that owner.
 */
export const SECTION_HOLD_GONE = -3;

/** How one attempt is made. */
export interface AttemptMode {
  /** The caller will wait if this attempt fails (fair lock: join the queue; writer: hold back readers). */
  readonly willWait: boolean;
  /**
   * The owner id comes from an enclosing lock section, so finding it already in Redis means a nested
   * acquire: count one more hold. For a fresh owner id it can only mean this very attempt already ran
   * once and its reply was lost (ioredis re-sends queued commands after a reconnect): then the hold
   * is taken as is, not counted twice, or one release would leave the lock held.
   */
  readonly reentry: boolean;
  /**
   * Identifies this one hold: unique per acquire call and the same for all of its tries. Scripts may
   * record it to tell a re-sent command from a new one (a nested hold, its release, its renewal).
   */
  readonly hold: string;
  /**
   * The caller is already waiting for this lock (it joined the wake channel): other callers may be
   * waiting too, so a grant leaves the lock marked as awaited and its release wakes the next one.
   */
  readonly waiting?: boolean;
}

/** How a held lock is renewed: by `script`, batched with others of the same script and cluster slot. */
export interface Renewal {
  readonly script: RedisScript;
  /** This hold's KEYS for the script (every hold of one script passes the same number). */
  readonly keys: readonly string[];
  /** This hold's member in ARGV (owner id or holder field). */
  readonly member: string;
  /** Where the renewal runs when not on the module's own client (Redlock: on every master). */
  readonly target?: RenewalTarget;
}

/** Runs renewals somewhere other than the module's own client; the watchdog batches by target. */
export interface RenewalTarget {
  /** Tells targets apart when the watchdog groups renewals into batches. */
  readonly id: string;
  /**
   * Renews a batch of holds of one script. Resolves, per hold, 1 (renewed), 0 (lost: no longer
   * held) or -1 (not confirmed this time: the handle's lease deadline decides).
   */
  renew(script: RedisScript, renewals: readonly Renewal[], leaseTime: number): Promise<number[]>;
}

/**
 * One kind of lock on one name: how to try, release, renew and give up waiting.
 * `LockAcquirer` (waiting) and `LockHoldRegistry` (watchdog, transactions, handles) treat all kinds the same way.
 */
export interface LockProtocol {
  /** The name the user gave. */
  readonly name: string;
  /** Pub/sub channel a release is announced on. */
  readonly wakeChannel: string;
  /**
   * Redis key under which the current lock section's owner id is remembered so nested acquires
   * re-enter; `undefined` for kinds that never re-enter (semaphore permits).
   */
  readonly reentrancyKey: string | undefined;
  /** True when releases wake one waiter by owner id (fair lock), not any waiter. */
  readonly wakesByOwner: boolean;
  /**
   * True when waiters of one process should line up in arrival order (the plain exclusive lock).
   * Not for kinds with shared holders (read/write, semaphore): there a newcomer may well be able to
   * share right away, and making it wait for a wake-up would only stall it.
   */
  readonly localFifo: boolean;
  /** Longest sleep while waiting, so the waiter refreshes its place in line (fair queue, waiting writer). */
  readonly heartbeat: number | undefined;

  attempt(client: RedisClient, owner: string, leaseTime: number, mode: AttemptMode): Promise<AttemptOutcome>;
  /** Returns -1 when not held, a count > 0 when re-entered holds remain, 0 when this hold ended. */
  release(client: RedisClient, owner: string, publishCommand: string, hold: string): Promise<number>;
  renewal(owner: string, hold: string): Renewal;
  /**
   * How much of a lease a holder may count on, from when the acquiring or renewing command was
   * sent. Absent: all of it. Redlock keeps back a clock-drift allowance between its masters.
   */
  validLease?(leaseTime: number): number;
  /** Called when a waiter gives up (timeout, abort), to take it out of line. */
  leave?(client: RedisClient, owner: string, publishCommand: string): Promise<void>;
}

/**
 * Where the subscriber connection comes from: the transport (`RedisConnection`), or in Redlock mode
 * a fan-out over the masters (see ../redlock/fan-out-subscriber.ts).
 */
export type WakeConnectionSource = Pick<RedisTransport, 'openSubscriber'>;
