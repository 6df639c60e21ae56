import type { RedisTransport } from '../../core/redis/redis-transport.js';
import type { RedisScript } from '../../core/redis/redis-script.js';

/**
 * Where a protocol runs its scripts: the module's transport (`RedisConnection`), whose
 * `publishCommand` is how a release announces itself (SPUBLISH on a cluster).
 */
export type LockScriptTarget = Pick<RedisTransport, 'runScript' | 'publishCommand'>;

/** Outcome of one acquire attempt. */
export type AttemptOutcome = AttemptGrant | AttemptRefusal;

/** A granted try: the hold it took. */
export interface AttemptGrant {
  readonly acquired: true;
  readonly fencingToken: string;
  /**
   * The owner id the hold is recorded under, when the protocol gives each try its own (Redlock:
   * a late answer to one try must never count for another). The handle, its re-entries and its
   * release use it; absent, the owner id passed to `attempt`.
   */
  readonly owner?: string;
}

/** Why a try was refused, and for how long at most the caller may sleep before trying again. */
export type AttemptRefusal =
  /** Held by another owner whose lease can run at most `waitMs` longer. */
  | { readonly acquired: false; readonly reason: 'held'; readonly waitMs: number }
  /** Held by a key without expiry: only a release frees it, so only the caller's deadline bounds the wait. */
  | { readonly acquired: false; readonly reason: 'held-without-lease' }
  /** The lock's key vanished between the try's checks: try again at once. */
  | { readonly acquired: false; readonly reason: 'vanished' }
  /**
   * Granted, but its reply came when the lease counted from the try's sending had (all but its
   * safety margin) run out: the hold was handed back unused. Try again at once.
   */
  | { readonly acquired: false; readonly reason: 'granted-late' }
  /**
   * A nested acquire (`AttemptMode.reentry`) found its section's owner no longer holding the lock:
   * the section's hold was lost, and the lock is never taken afresh under that owner.
   */
  | { readonly acquired: false; readonly reason: 'section-lost' };

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
 * `LockAcquirer` (waiting) and `LockHoldRegistry` (watchdog, handles) treat all kinds the same way.
 */
export interface LockProtocol {
  /** The name of its kind's entry in LOCK_KINDS (`mutex`, `fair`, `read-write`, `semaphore`). */
  readonly kind: string;
  /** A read/write lock's side; undefined for every other kind. */
  readonly side?: 'read' | 'write';
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
  /**
   * True when the protocol's tries do not go over the module's connection (Redlock: to its
   * masters, which settle tries left unanswered themselves): the acquirer then neither judges the
   * connection by them nor undoes them.
   */
  readonly settlesOwnTries: boolean;

  attempt(redis: LockScriptTarget, owner: string, leaseTime: number, mode: AttemptMode): Promise<AttemptOutcome>;
  /** Returns -1 when not held, a count > 0 when re-entered holds remain, 0 when this hold ended. */
  release(redis: LockScriptTarget, owner: string, hold: string): Promise<number>;
  renewal(owner: string, hold: string): Renewal;
  /**
   * How much of a lease a holder may count on, from when the acquiring or renewing command was
   * sent. Absent: all of it. Redlock keeps back a clock-drift allowance between its masters.
   */
  validLease?(leaseTime: number): number;
  /** Called when a waiter gives up (timeout, abort), to take it out of line. */
  leave?(redis: LockScriptTarget, owner: string): Promise<void>;
}

/**
 * Where the subscriber connection comes from: the transport (`RedisConnection`), or in Redlock mode
 * a fan-out over the masters (see ../redlock/fan-out-subscriber.ts).
 */
export type WakeConnectionSource = Pick<RedisTransport, 'openSubscriber'>;
