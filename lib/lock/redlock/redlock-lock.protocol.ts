import { UnsupportedInRedlockModeError } from '../../errors/unsupported-in-redlock-mode.error';
import type { LockKeys } from '../../keys/redis-key-space';
import type { RedisClient } from '../../options/redis-lock-config';
import type { ResolvedAcquireOptions } from '../acquire-options';
import type { AttemptMode, AttemptOutcome, LockProtocol, Renewal } from '../protocols/lock-protocol.interface';
import { renewLocksScript } from '../scripts/renew-locks.lua';
import type { RedlockQuorum } from './redlock-quorum';

/**
 * The exclusive, reentrant lock in Redlock mode: the same owner hash, counter and wake channel as
 * the plain lock, on every master, held when a majority agrees. `LockService` runs waiting,
 * watchdog, handles and transactions for it as for any lock kind; the single `client` it passes
 * is the delayed-job connection and is not used here.
 *
 * One instance serves one acquire call (all its tries), which lets it remember a split vote and
 * pause a random moment before the next try, so colliding contenders stop colliding.
 */
export class RedlockLockProtocol implements LockProtocol {
  readonly wakesByOwner = false;
  readonly localFifo = true;
  readonly heartbeat = undefined;
  private collided = false;

  private constructor(
    private readonly keys: LockKeys,
    private readonly quorum: RedlockQuorum,
  ) {}

  /** The protocol for one acquire; refuses options that need a single Redis. */
  static forAcquire(keys: LockKeys, quorum: RedlockQuorum, options: ResolvedAcquireOptions): RedlockLockProtocol {
    if (options.fair) throw new UnsupportedInRedlockModeError('fair');
    if (options.syncReplicas) throw new UnsupportedInRedlockModeError('syncReplicas');
    return new RedlockLockProtocol(keys, quorum);
  }

  get name(): string {
    return this.keys.name;
  }

  get wakeChannel(): string {
    return this.keys.wakeChannel;
  }

  get reentrancyKey(): string {
    return this.keys.owners;
  }

  async attempt(_client: RedisClient, owner: string, leaseTime: number, mode: AttemptMode): Promise<AttemptOutcome> {
    if (this.collided && this.quorum.retryJitter > 0) {
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * (this.quorum.retryJitter + 1))));
    }
    const { collided, ...outcome } = await this.quorum.acquire(this.keys, owner, leaseTime, mode.reentry);
    this.collided = collided;
    return outcome as AttemptOutcome;
  }

  release(_client: RedisClient, owner: string): Promise<number> {
    return this.quorum.release(this.keys, owner);
  }

  renewal(owner: string): Renewal {
    return { script: renewLocksScript, keys: [this.keys.owners], member: owner, target: this.quorum };
  }

  validLease(leaseTime: number): number {
    return this.quorum.validLease(leaseTime);
  }
}
