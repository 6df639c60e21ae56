import { LockKindConflictError } from '../../../core/errors/lock-kind-conflict.error.js';
import { attemptOutcome } from '../../protocols/attempt-reply.js';
import type { LockKindDefinition } from '../../protocols/lock-kind.js';
import type { AttemptMode, AttemptOutcome, LockScriptTarget, Renewal } from '../../protocols/lock-protocol.interface.js';
import { OwnerHashLockProtocol } from '../../protocols/owner-hash-lock.protocol.js';
import { acquireLockScript } from './acquire-lock.lua.js';
import { OWNER_HASH_INSPECTION } from './owner-hash-inspection.js';
import { readLockScript } from './read-lock.lua.js';
import { releaseLockScript } from './release-lock.lua.js';
import { renewLocksScript } from './renew-locks.lua.js';

/** The default lock: exclusive, reentrant within a lock section, any waiter may win a release. */
export class MutexProtocol extends OwnerHashLockProtocol {
  readonly kind: string = 'mutex';
  readonly wakesByOwner: boolean = false;
  readonly localFifo: boolean = true;
  readonly heartbeat: number | undefined = undefined;

  attempt(redis: LockScriptTarget, owner: string, leaseTime: number, mode: AttemptMode): Promise<AttemptOutcome> {
    return acquireLockScript
      .run<[number, string | number]>(
        redis,
        [this.keys.owners, this.keys.fence],
        [owner, leaseTime, mode.reentry ? '1' : '0', '', mode.hold, mode.waiting ? 'waiting' : mode.willWait ? 'wait' : ''],
      )
      .then(([granted, value]) => {
        if (granted === -2) throw new LockKindConflictError(this.name, 'exclusive');
        return attemptOutcome(granted, value);
      });
  }

  release(redis: LockScriptTarget, owner: string, hold: string): Promise<number> {
    return releaseLockScript.run<number>(
      redis,
      [this.keys.owners, this.keys.wakeChannel, this.keys.queue],
      [owner, redis.publishCommand, hold],
    );
  }

  renewal(owner: string): Renewal {
    return { script: renewLocksScript, keys: [this.keys.owners], member: owner };
  }
}

/**
 * The plain exclusive lock (`acquire`, `tryAcquire`, `using`, `@WithLock`). Its owner hash is the
 * key family the fair and read/write locks share, so its inspection reads theirs too; in Redlock
 * mode it is the one kind taken on a quorum of masters.
 */
export const MUTEX: LockKindDefinition = {
  name: 'mutex',
  scripts: [acquireLockScript, releaseLockScript, renewLocksScript, readLockScript],
  redlock: 'quorum',
  inspection: OWNER_HASH_INSPECTION,
  protocol: (name, _variant, { keySpace }) => new MutexProtocol(keySpace.lock(name)),
};
