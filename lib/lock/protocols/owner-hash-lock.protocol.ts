import type { LockKeys } from '../../core/keys/redis-key-space.js';
import type { AttemptMode, AttemptOutcome, LockProtocol, LockScriptTarget, Renewal } from './lock-protocol.interface.js';

/**
 * What every lock recorded in an owner hash shares (plain, fair, read/write, Redlock): its name,
 * its wake channel, and re-entry keyed by that hash, so a section's owner id is found again by
 * the hash's Redis key whichever kind took it.
 */
export abstract class OwnerHashLockProtocol implements LockProtocol {
  abstract readonly kind: string;
  abstract readonly wakesByOwner: boolean;
  abstract readonly localFifo: boolean;
  abstract readonly heartbeat: number | undefined;
  readonly settlesOwnTries: boolean = false;

  constructor(protected readonly keys: LockKeys) {}

  get name(): string {
    return this.keys.name;
  }

  get wakeChannel(): string {
    return this.keys.wakeChannel;
  }

  get reentrancyKey(): string {
    return this.keys.owners;
  }

  abstract attempt(redis: LockScriptTarget, owner: string, leaseTime: number, mode: AttemptMode): Promise<AttemptOutcome>;
  abstract release(redis: LockScriptTarget, owner: string, hold: string): Promise<number>;
  abstract renewal(owner: string, hold: string): Renewal;
}
