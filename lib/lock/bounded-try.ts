import { LockAcquireTimeoutError } from '../core/errors/lock-acquire-timeout.error.js';
import { RedisConnectionError } from '../core/errors/redis-connection.error.js';
import { RedisReachability } from '../core/redis/reachability.js';
import type { RedisConnection } from '../core/connection/redis-connection.js';
import type { AbandonedHolds } from './abandoned-holds.js';
import { DeadlineList } from './deadline-list.js';
import type { AcquireCall } from './acquire-call.js';
import type { AttemptGrant, AttemptMode, AttemptOutcome, AttemptRefusal, LockProtocol } from './protocols/lock-protocol.interface.js';
import { awaitReplicas } from './replica-sync.js';
import { handleLeaseLostAt } from './held-lock-handle.js';

const GRANTED_LATE: AttemptRefusal = { acquired: false, reason: 'granted-late' };

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
/** Rechecks in a row at most: on a host where every timer fires late, the verdict is not put off for good. */
const MAX_STALL_RECHECKS = 5;

/**
 * The tries of acquire calls, one at a time, each settled into its outcome: a won hold, a refusal,
 * or an error. A try bounded by its call's deadline (a call that waits) that Redis leaves
 * unanswered fails at the deadline (naming Redis, not contention, when the connection is silent);
 * a try whose outcome the caller will never receive is undone in the background (`AbandonedHolds`);
 * with `syncReplicas` a grant is won only once enough replicas confirmed it (`awaitReplicas`), and
 * undone otherwise. It hands out no handle and calls nothing of the acquirer: what a won hold or a
 * refusal leads to is the acquirer's to decide.
 * One per `LockAcquirer`: the deadlines of all tries in flight share one timer.
 */
export class BoundedTries {
  /** The hung-call deadline of every try in flight, on one timer (a try's deadline is its call's). */
  private readonly deadlines = new DeadlineList(true);

  constructor(
    private readonly connection: RedisConnection,
    private readonly abandoned: AbandonedHolds,
  ) {}

  /**
   * One try of `call`, sent at `sentAt`; `waiting`: the caller already waits for this lock (see
   * AttemptMode.waiting). A call that waits gives up the try at its deadline even if Redis does not
   * answer (a black-holed connection would otherwise hold the caller far past its waitTimeout); a
   * grant that still comes after that is released at once, so nothing is left held by a caller that
   * gave up. A call that does not wait (`tryAcquire`, or `waitTimeout` 0) is answered by Redis or
   * by the connection's own bound. A grant is won only while its lease, counted from `sentAt`, is
   * still good (`won`).
   */
  settle(call: AcquireCall, waiting: boolean, sentAt: number): Promise<AttemptOutcome> {
    const { protocol, owner, hold, options } = call;
    const mode: AttemptMode = { willWait: call.willWait, reentry: call.reentry, hold, waiting };
    const attempt = protocol.attempt(this.connection, owner, options.leaseTime, mode);
    const answered = call.willWait ? this.beforeDeadline(call, attempt, sentAt) : this.answered(call, attempt, sentAt);
    return answered.then((outcome) => (outcome.acquired ? this.won(call, outcome, sentAt) : outcome));
  }

  /**
   * A granted try as won (with `syncReplicas` once the replicas confirmed it) if the handle made of it
   * would be held: its lease, counted from `sentAt` (Redlock: its validity), still has more than the
   * handle's loss margin left. Otherwise Redis ran the try late (a paused or busy server, a stalled
   * process): the hold is handed back by its ids (Redis may still list it; a re-entry ends only its
   * own hold) and, once Redis ran that, the try settles as refused (`granted-late`), so no caller
   * gets a handle already lost and the call's next try cannot be undone by the hand-back.
   */
  private won(call: AcquireCall, grant: AttemptGrant, sentAt: number): AttemptOutcome | Promise<AttemptOutcome> {
    if (call.options.syncReplicas) return this.replicated(call, grant).then(() => this.inLease(call, grant, sentAt));
    return this.inLease(call, grant, sentAt);
  }

  private inLease(call: AcquireCall, grant: AttemptGrant, sentAt: number): AttemptOutcome | Promise<AttemptOutcome> {
    const { protocol, options, hold } = call;
    if (performance.now() < handleLeaseLostAt(protocol, options.leaseTime, sentAt)) return grant;
    call.granted = false;
    const owner = grant.owner ?? call.owner;
    // On the connection that carried the try (so after it). A call that does not wait has no next try.
    if (!call.willWait) {
      this.abandoned.releaseAbandoned(protocol, owner, hold);
      return GRANTED_LATE;
    }
    return this.givenBackOrOver(call, this.abandoned.giveBack(protocol, owner, hold, options.leaseTime));
  }

  /**
   * `granted-late` once the give-back ran in Redis, or once the call's deadline passed or its signal
   * aborted (the acquirer then ends the call without another try: nothing can reach Redis before the
   * give-back). A give-back Redis fails fails the call.
   */
  private givenBackOrOver(call: AcquireCall, givingBack: Promise<void>): Promise<AttemptOutcome> {
    const signal = call.options.signal;
    return new Promise<AttemptOutcome>((resolve, reject) => {
      const over = () => {
        this.deadlines.cancel(timer);
        signal?.removeEventListener('abort', over);
        resolve(GRANTED_LATE);
      };
      const timer = this.deadlines.add(Math.ceil(call.deadline) + 1, over);
      signal?.addEventListener('abort', over, { once: true });
      givingBack.then(over, (error: unknown) => {
        this.deadlines.cancel(timer);
        signal?.removeEventListener('abort', over);
        reject(error);
      });
    });
  }

  /** A try that does not wait: the attempt itself, with what a failure may have taken undone. */
  private answered(call: AcquireCall, attempt: Promise<AttemptOutcome>, sentAt: number): Promise<AttemptOutcome> {
    // A side branch, not a link of the chain: this is the uncontended path of every tryAcquire.
    attempt.catch((error: unknown) => this.undoIfUnknown(call, error, sentAt));
    return attempt;
  }

  /** A try that gives up at its call's deadline (see `settle`). */
  private beforeDeadline(call: AcquireCall, attempt: Promise<AttemptOutcome>, sentAt: number): Promise<AttemptOutcome> {
    const { protocol, owner, hold, options, deadline, reportedKey } = call;
    // One hand-rolled promise rather than Promise.race + finally: this runs on every acquire.
    return new Promise<AttemptOutcome>((resolve, reject) => {
      let settled = false;
      // Rounded up to the next whole ms: the try never times out before its deadline. Lateness is
      // counted from when the timer could first fire (a try sent after its call's deadline: at once).
      let due = Math.max(Math.ceil(deadline) + 1, sentAt);
      // Since when Redis can have been silent on this try: when it went out. Writes are flushed at the
      // end of the current turn (coalesce-writes.ts, a tick queued before this one): a stall of this
      // process in the same turn as the try delays its write, one in a later turn does not.
      let writtenAt = sentAt;
      process.nextTick(() => (writtenAt = performance.now()));
      let rechecks = 0;
      // The verdict at the deadline is only given by a timer that fired on time: one that fired late
      // (this process was stalled past the deadline) is checked again after a short wait during which
      // pending I/O is read, so a reply that arrived during the stall settles the try as answered
      // (granted or refused) instead of failing it as unanswered or timed out. The try never times
      // out before its deadline; after a stall, a little after it.
      const expire = () => {
        const late = performance.now() - due;
        if (late > STALLED_MS && rechecks++ < MAX_STALL_RECHECKS) {
          due = performance.now() + Math.min(late, STALL_RECHECK_MS);
          timer = this.deadlines.add(due, expire);
          return;
        }
        settled = true;
        reject(this.unansweredTryError(protocol, writtenAt, reportedKey) ?? new LockAcquireTimeoutError(reportedKey, options.waitTimeout));
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
          if (outcome.acquired) call.granted = true;
          resolve(outcome);
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

  /**
   * A grant once `syncReplicas` replicas confirmed it; one they did not is released here, directly
   * (no handle exists yet: nothing to defer to a transaction, nothing watched), and the call fails
   * with `LockNotReplicatedError`. Chained on the try's reply: the WAIT goes to the connection that
   * carried it.
   */
  private replicated(call: AcquireCall, grant: AttemptGrant): Promise<void> {
    const { protocol, options, hold } = call;
    const owner = grant.owner ?? call.owner;
    return awaitReplicas(this.connection, protocol.wakeChannel, options.syncReplicas!, call.reportedKey, () =>
      protocol.release(this.connection, owner, hold),
    );
  }

  /**
   * Why a try is still unanswered when its call's wait ends, if the reason is Redis rather than
   * contention: the connection is down, or nothing at all came back on it since `sentAt` (when the
   * try was written), `SILENT_TRY_MS` ago or more. Undefined
   * otherwise (the lock was held at the last answer, or the reply is merely slow). Redlock tries go
   * to the masters, not this connection.
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
  private undoIfUnknown(call: AcquireCall, error: unknown, sentAt: number): void {
    if (!(error instanceof RedisConnectionError) || RedisReachability.neverSent(error) || call.protocol.settlesOwnTries) return;
    this.abandoned.releaseUnknown(call.protocol, call.owner, call.hold, sentAt + call.options.leaseTime);
  }
}

/** A key or keys as an error message names them. */
export function formatKey(key: string | readonly string[]): string {
  return typeof key === 'string' ? JSON.stringify(key) : `[${key.map((k) => JSON.stringify(k)).join(', ')}]`;
}
