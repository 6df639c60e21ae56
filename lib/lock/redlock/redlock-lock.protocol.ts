import { UnsupportedInRedlockModeError } from '../../core/errors/unsupported-in-redlock-mode.error.js';
import type { LockKeys } from '../../core/keys/redis-key-space.js';
import type { ResolvedAcquireOptions } from '../interfaces/acquire-options.interface.js';
import type { AttemptMode, AttemptOutcome, LockScriptTarget, Renewal } from '../protocols/lock-protocol.interface.js';
import { OwnerHashLockProtocol } from '../protocols/owner-hash-lock.protocol.js';
import { renewLocksScript } from '../kinds/mutex/renew-locks.lua.js';
import type { WonHold } from './holder-tokens.js';
import type { RedlockQuorum, TryIds } from './redlock-quorum.js';

/**
 * The exclusive, reentrant lock in Redlock mode: the same owner hash, counter and wake channel as
 * the plain lock, on every master, held when a majority agrees. `LockAcquirer` and
 * `LockHoldRegistry` wait, renew, hand out handles and defer releases for it as for any lock kind;
 * the single `client` they pass is the delayed-job connection and is not used here.
 *
 * One instance serves one acquire call (all its tries), which lets it remember a split vote and
 * pause a random moment before the next try, so colliding contenders stop colliding, and remember
 * which try won, so the handle's release and renewal address that try's hold.
 */
export class RedlockLockProtocol extends OwnerHashLockProtocol {
  readonly kind = 'mutex';
  readonly wakesByOwner = false;
  readonly localFifo = true;
  readonly heartbeat = undefined;
  /** Tries go to the masters, which hand back the grants of a try the quorum gave up on. */
  override readonly settlesOwnTries = true;
  private collided = false;
  private tries = 0;
  /** The try that won: release and renewal of the handle go to its ids. */
  private won?: WonHold;

  private constructor(
    keys: LockKeys,
    private readonly quorum: RedlockQuorum,
  ) {
    super(keys);
  }

  /** The protocol for one acquire; refuses options that need a single Redis. */
  static forAcquire(keys: LockKeys, quorum: RedlockQuorum, options: ResolvedAcquireOptions | undefined): RedlockLockProtocol {
    if (options?.syncReplicas) throw new UnsupportedInRedlockModeError('syncReplicas', '`syncReplicas`');
    return new RedlockLockProtocol(keys, quorum);
  }

  async attempt(_redis: LockScriptTarget, owner: string, leaseTime: number, mode: AttemptMode): Promise<AttemptOutcome> {
    if (this.collided && this.quorum.retryJitter > 0) {
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * (this.quorum.retryJitter + 1))));
    }
    const onMasters = this.tryIds(owner, mode);
    const holderToken = mode.reentry ? this.quorum.holderTokens.tokenOf(this.keys.owners, owner) : undefined;
    const { collided, ...outcome } = await this.quorum.acquire(this.keys, onMasters, leaseTime, mode.reentry, holderToken);
    this.collided = collided;
    if (!outcome.acquired) return outcome as AttemptOutcome;
    const won: WonHold = { ...onMasters, fencingToken: outcome.fencingToken };
    this.won = won;
    if (!mode.reentry) this.quorum.holderTokens.remember(this.keys.owners, won);
    return { acquired: true, fencingToken: won.fencingToken, owner: won.owner };
  }

  async release(_redis: LockScriptTarget, owner: string, hold: string): Promise<number> {
    const ids = this.won ?? { owner, hold };
    const left = await this.quorum.release(this.keys, ids);
    if (left === 0) this.quorum.holderTokens.forget(this.keys.owners, ids.owner);
    return left;
  }

  renewal(owner: string, hold: string): Renewal {
    const { owner: member } = this.won ?? { owner, hold };
    return { script: renewLocksScript, keys: [this.keys.owners], member, target: this.quorum };
  }

  /**
   * The ids one try is recorded under on the masters. A master may answer a try after the quorum
   * gave up on it (the grant is then handed back when it arrives) while a later try of the same
   * acquire is already on its way there. With ids shared between tries, that master would take
   * the later try for a re-sent copy of the earlier one and grant it, and the earlier try's
   * hand-back would then delete the later try's grant. So every try is its own hold: a fresh
   * acquire gets an owner id per try (the winning try's becomes the handle's owner, which nested
   * acquires re-enter), a re-entry keeps the enclosing owner and gets a hold id per try.
   */
  private tryIds(owner: string, mode: AttemptMode): TryIds {
    const n = ++this.tries;
    const onMasters = mode.reentry ? owner : `${owner}.${n}`;
    // Hold ids stay `<owner>/<n>` (with the owner they are recorded under).
    const holdPart = mode.hold.startsWith(`${owner}/`) ? mode.hold.slice(owner.length + 1) : mode.hold;
    return { owner: onMasters, hold: `${onMasters}/${holdPart}${mode.reentry ? `.${n}` : ''}` };
  }

  validLease(leaseTime: number): number {
    return this.quorum.validLease(leaseTime);
  }
}
