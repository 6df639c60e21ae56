import { randomBytes } from 'node:crypto';
import { RedisConnectionError } from '../../core/errors/redis-connection.error.js';
import type { LockKeys } from '../../core/keys/redis-key-space.js';
import type { RedlockConfig } from '../../core/options/redis-lock-config.js';
import type { RedisScript } from '../../core/redis/redis-script.js';
import { attemptOutcome } from '../protocols/attempt-reply.js';
import type { AttemptOutcome, AttemptRefusal, Renewal, RenewalTarget } from '../protocols/lock-protocol.interface.js';
import { runRenewal } from '../protocols/run-renewal.js';
import { acquireLockScript } from '../kinds/mutex/acquire-lock.lua.js';
import { planFencingToken } from './fencing-token.js';
import { HolderTokens } from './holder-tokens.js';
import { collectReplies, firstError, successes, type RepliesSoFar } from './quorum-replies.js';
import type { RedlockMaster } from './redlock-master.js';
import { raiseFenceScript } from './scripts/raise-fence.lua.js';
import { releaseRedlockScript } from './scripts/release-redlock.lua.js';
import { errorMessage } from '../../core/errors/error-message.js';

/** One try on all masters; `collided` when some masters granted but not a majority (a split vote). */
type QuorumAttemptOutcome = AttemptOutcome & { readonly collided: boolean };

/** The ids one hold (one try of an acquire) is recorded under on every master. */
export interface TryIds {
  readonly owner: string;
  readonly hold: string;
}

/** Makes each release message unique, so copies from several masters can be told apart from new releases. */
const RELEASE_ID_PREFIX = randomBytes(4).toString('hex');
let releaseSequence = 0;

/**
 * The Redlock algorithm over N independent masters: every operation goes to all of them at once
 * and counts answers, so a minority that is down, slow or partitioned neither blocks nor decides.
 *
 * A hold is valid for `lease - elapsed - drift` (drift = lease × driftFactor + 2 ms), counted from
 * when the try was sent: Redis expires keys on each master's own clock, and those clocks may run
 * apart by a little. Handles keep that shorter deadline through `validLease`.
 */
export class RedlockQuorum implements RenewalTarget {
  readonly id = 'redlock';
  readonly quorum: number;
  /** Tokens of the holds this process won, for their re-entries. */
  readonly holderTokens = new HolderTokens();

  constructor(
    private readonly masters: readonly RedlockMaster[],
    private readonly config: RedlockConfig,
    private readonly onBackgroundError: (message: string) => void,
  ) {
    this.quorum = config.quorum;
  }

  get retryJitter(): number {
    return this.config.retryJitter;
  }

  /** How much of a lease a holder may count on, from when the try (or renewal) was sent. */
  validLease(leaseTime: number): number {
    return leaseTime - Math.floor(leaseTime * this.config.driftFactor) - 2;
  }

  /**
   * One try on every master. Succeeds when a majority granted, the fencing token is backed by a
   * majority, and time is left of the lease; otherwise hands back every grant (also those that
   * arrive late) and says how long to wait.
   *
   * On each master the hold is an ordinary reentrant hold (the plain lock's acquire script, its
   * fence stepped by one: 'counter'). `ids` must be this try's own (see RedlockLockProtocol): a
   * grant handed back is addressed by them, so it can only ever undo this try.
   *
   * A re-entry passes the token its holder was given (`holderToken`): a majority of re-entry
   * grants returns that one, with no fence planning.
   */
  async acquire(keys: LockKeys, ids: TryIds, leaseTime: number, reentry: boolean, holderToken?: string): Promise<QuorumAttemptOutcome> {
    const started = performance.now();
    const quorum = this.quorum;
    const budget = this.budget(leaseTime);
    const args = [ids.owner, leaseTime, reentry ? '1' : '0', 'counter', ids.hold];
    const calls = this.masters.map((master) =>
      acquireLockScript
        .run<[granted: number, value: string | number]>(master, [keys.owners, keys.fence], args)
        .then(([granted, value]) => attemptOutcome(granted, value)),
    );
    const replies = await collectReplies(calls, budget, (so) => {
      const granted = countGrants(so);
      return granted >= quorum || granted + unanswered(so) < quorum;
    });

    const grants = successes(replies).flatMap(({ master, value }) =>
      value.acquired ? [{ master, fence: BigInt(value.fencingToken) }] : [],
    );
    let won = false;
    let token = 0n;
    if (grants.length >= quorum && holderToken !== undefined) {
      token = BigInt(holderToken);
      won = this.validLease(leaseTime) - (performance.now() - started) > 0;
    } else if (grants.length >= quorum) {
      const plan = planFencingToken(grants, quorum);
      token = plan.token;
      const raised =
        plan.behind.length === 0 ? 0 : await this.raiseFence(keys.fence, token, plan.behind, quorum - plan.atToken, started + budget);
      won = plan.atToken + raised >= quorum && this.validLease(leaseTime) - (performance.now() - started) > 0;
    }

    // A grant that answers after the decision is ours too: kept when we won (release and renewal go
    // to every master), handed back when we lost, so no partial hold outlives the try.
    if (!won) this.handBackGrants(calls, replies, keys, ids);

    if (won) return { acquired: true, fencingToken: String(token), collided: false };
    // A re-entry that too many masters no longer list the section's owner on: that hold is lost
    // (no majority can still have it), and a nested acquire never takes the lock afresh under it.
    const sectionGone = successes(replies).filter(({ value }) => !value.acquired && value.reason === 'section-lost').length;
    if (reentry && sectionGone > this.masters.length - quorum) {
      return { acquired: false, reason: 'section-lost', collided: false };
    }
    return { ...this.waitAfterLoss(replies, grants.length), collided: grants.length > 0 };
  }

  /**
   * Releases one level of the hold on every master. Resolves once a majority answered (the rest
   * finish in the background): 0 freed, > 0 re-entered holds remain, -1 not held.
   */
  async release(keys: LockKeys, ids: TryIds): Promise<number> {
    const message = releaseMessage();
    const calls = this.masters.map((_, master) => this.releaseOn(master, keys, ids, message));
    const replies = await collectReplies(calls, this.config.requestTimeout, (so) => successes(so).length >= this.quorum);
    const results = successes(replies).map(({ value }) => value);
    if (results.length === 0) throw this.noAnswer(replies, 'release a lock');
    if (results.includes(0)) return 0;
    const left = Math.max(...results);
    return left > 0 ? left : -1;
  }

  /**
   * Renews holds on every master (the watchdog's batch, or `extend()`): per hold 1 when a majority
   * renewed it, 0 when so many masters no longer list it that no majority can (lost), -1 when too
   * few answered to tell (the handle's lease deadline then decides).
   */
  async renew(script: RedisScript, renewals: readonly Renewal[], leaseTime: number): Promise<number[]> {
    const calls = this.masters.map((master) => runRenewal(master, script, renewals, leaseTime));
    const replies = await collectReplies(calls, this.budget(leaseTime), (so) =>
      renewals.every((_, i) => this.renewalVerdict(so, i) !== -1),
    );
    if (successes(replies).length === 0) throw this.noAnswer(replies, 'renew locks');
    return renewals.map((_, i) => this.renewalVerdict(replies, i));
  }

  /** True when so many masters list an owner that no majority of free masters is left. */
  async isLocked(ownersKey: string): Promise<boolean> {
    const calls = this.masters.map((master) => master.command<number>('exists', ownersKey));
    const replies = await collectReplies(calls, this.config.requestTimeout, () => false);
    const answers = successes(replies);
    if (answers.length === 0) throw this.noAnswer(replies, 'check a lock');
    const holding = answers.filter(({ value }) => value === 1).length;
    return holding > this.masters.length - this.quorum;
  }

  /** Longest wait for one round of answers: beyond the valid lease a win is impossible anyway. */
  private budget(leaseTime: number): number {
    return Math.max(1, Math.min(this.config.requestTimeout, this.validLease(leaseTime)));
  }

  /**
   * Raises lagging granting masters to the token; resolves how many got there before `deadline`.
   * Only masters this try holds the lock on are raised, so nothing else moves their counters meanwhile.
   */
  private async raiseFence(fenceKey: string, token: bigint, masters: readonly number[], needed: number, deadline: number): Promise<number> {
    const calls = masters.map((i) => raiseFenceScript.run<number>(this.masters[i], [fenceKey], [token.toString()]));
    const replies = await collectReplies(calls, deadline - performance.now(), (so) => successes(so).length >= needed);
    return successes(replies).length;
  }

  private handBackGrants(
    calls: readonly Promise<AttemptOutcome>[],
    replies: RepliesSoFar<AttemptOutcome>,
    keys: LockKeys,
    ids: TryIds,
  ): void {
    calls.forEach((call, master) => {
      const reply = replies[master];
      if (reply === undefined) {
        call.then(
          (late) => late.acquired && this.handBack(master, keys, ids),
          () => undefined,
        );
      } else if (reply.ok && reply.value.acquired) {
        this.handBack(master, keys, ids);
      }
    });
  }

  /**
   * Ends one hold on one master. A master out of reach at that moment (the command never left, or
   * was dropped with its connection) gets it again once its connection is back, so the hold does
   * not stay there until its lease ends. Safe to run twice: it ends the hold by its id.
   */
  private releaseOn(master: number, keys: LockKeys, ids: TryIds, message: string): Promise<number> {
    const run = () =>
      releaseRedlockScript.run<number>(this.masters[master], [keys.owners, keys.wakeChannel], [ids.owner, message, ids.hold]);
    return run().catch((error: unknown) => {
      if (error instanceof RedisConnectionError) {
        this.masters[master].whenReconnected(() => {
          run().catch((again: unknown) =>
            this.onBackgroundError(`Could not release a Redlock hold on master ${master}: ${errorMessage(again)}`),
          );
        });
      }
      throw error;
    });
  }

  /** Releases this try's hold on one master. Its fence step stays: a fence only grows. */
  private handBack(master: number, keys: LockKeys, ids: TryIds): void {
    this.releaseOn(master, keys, ids, releaseMessage()).catch((error: unknown) =>
      // Its lease frees it anyway.
      this.onBackgroundError(`Could not hand back a partial Redlock grant on master ${master}: ${errorMessage(error)}`),
    );
  }

  /**
   * How long a losing try may sleep: until enough of the masters that said no can have let go for a
   * majority to be free (their holders' remaining leases), or `retryDelay` when too few masters
   * answered to know (they could not announce a release either).
   */
  private waitAfterLoss(replies: RepliesSoFar<AttemptOutcome>, grants: number): AttemptRefusal {
    const needed = this.quorum - grants;
    // won a majority too late: go again soon
    if (needed <= 0) return { acquired: false, reason: 'held', waitMs: Math.floor(Math.random() * (this.config.retryJitter + 1)) };
    const holdsLeft = successes(replies)
      .flatMap(({ value }) => (value.acquired ? [] : [value]))
      .map((refused) =>
        refused.reason === 'held' ? Math.max(0, refused.waitMs) : refused.reason === 'held-without-lease' ? Number.POSITIVE_INFINITY : 0,
      )
      .sort((a, b) => a - b);
    if (holdsLeft.length < needed) return { acquired: false, reason: 'held', waitMs: this.config.retryDelay };
    const wait = holdsLeft[needed - 1];
    if (wait === Number.POSITIVE_INFINITY) return { acquired: false, reason: 'held-without-lease' };
    return { acquired: false, reason: 'held', waitMs: wait };
  }

  private renewalVerdict(replies: RepliesSoFar<number[]>, hold: number): number {
    let renewed = 0;
    let refused = 0;
    for (const reply of replies) {
      if (!reply?.ok) continue;
      if (reply.value[hold] === 1) renewed++;
      else refused++;
    }
    if (renewed >= this.quorum) return 1;
    if (refused > this.masters.length - this.quorum) return 0;
    return -1;
  }

  private noAnswer(replies: RepliesSoFar<unknown>, action: string): RedisConnectionError {
    const cause = firstError(replies);
    const reason = cause === undefined ? `none answered within ${this.config.requestTimeout} ms` : errorMessage(cause);
    return new RedisConnectionError(
      `No Redlock master answered while trying to ${action} (${reason}). Check that the masters are up and reachable, then retry.`,
      cause,
    );
  }
}

function countGrants(replies: RepliesSoFar<AttemptOutcome>): number {
  let granted = 0;
  for (const reply of replies) if (reply?.ok && reply.value.acquired) granted++;
  return granted;
}

/** '1:<release id>': wakes one waiter, and lets the fan-out subscriber drop the other masters' copies. */
function releaseMessage(): string {
  return `1:${RELEASE_ID_PREFIX}${(++releaseSequence).toString(36)}`;
}

function unanswered(replies: RepliesSoFar<unknown>): number {
  let pending = 0;
  for (const reply of replies) if (reply === undefined) pending++;
  return pending;
}
