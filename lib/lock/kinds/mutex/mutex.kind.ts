import { LockKindConflictError } from '../../../core/errors/lock-kind-conflict.error.js';
import type { RedisClient } from '../../../core/options/redis-lock-config.js';
import { acquireLockScript } from './acquire-lock.lua.js';
import { releaseLockScript } from './release-lock.lua.js';
import { renewLocksScript } from './renew-locks.lua.js';
import type { AttemptMode, AttemptOutcome, Renewal } from '../../protocols/lock-protocol.interface.js';
import { OwnerHashLockProtocol } from '../../protocols/owner-hash-lock.protocol.js';

/** The default lock: exclusive, reentrant within a lock section, any waiter may win a release. */
export class ReentrantLockProtocol extends OwnerHashLockProtocol {
  readonly wakesByOwner: boolean = false;
  readonly localFifo: boolean = true;
  readonly heartbeat: number | undefined = undefined;

  attempt(client: RedisClient, owner: string, leaseTime: number, mode: AttemptMode): Promise<AttemptOutcome> {
    return acquireLockScript
      .run<[number, string | number]>(
        client,
        [this.keys.owners, this.keys.fence],
        [owner, leaseTime, mode.reentry ? '1' : '0', '', mode.hold, mode.waiting ? 'waiting' : mode.willWait ? 'wait' : ''],
      )
      .then(([ok, value]) => {
        if (ok === -2) throw new LockKindConflictError(this.name, 'exclusive');
        return ok === 1 ? { acquired: true, fencingToken: String(value) } : { acquired: false, waitMs: Number(value) };
      });
  }

  release(client: RedisClient, owner: string, publishCommand: string, hold: string): Promise<number> {
    return releaseLockScript.run<number>(
      client,
      [this.keys.owners, this.keys.wakeChannel, this.keys.queue],
      [owner, publishCommand, hold],
    );
  }

  renewal(owner: string): Renewal {
    return { script: renewLocksScript, keys: [this.keys.owners], member: owner };
  }
}
