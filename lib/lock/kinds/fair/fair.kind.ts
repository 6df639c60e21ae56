import { LockKindConflictError } from '../../../core/errors/lock-kind-conflict.error.js';
import { attemptOutcome } from '../../protocols/attempt-reply.js';
import type { LockKindDefinition } from '../../protocols/lock-kind.js';
import type { AttemptMode, AttemptOutcome, LockScriptTarget } from '../../protocols/lock-protocol.interface.js';
import { MutexProtocol } from '../mutex/mutex.kind.js';
import { acquireFairLockScript } from './acquire-fair-lock.lua.js';
import { leaveFairQueueScript } from './leave-fair-queue.lua.js';

/**
 * How long a waiter stays in a fair queue without showing it is alive. A waiter refreshes every
 * third of it while it waits; one that died is skipped after at most this long.
 */
export const FAIR_WAITER_LIVENESS_MS = 5_000;

/**
 * A reentrant lock handed over in FIFO order: waiters queue in Redis, a release wakes only the
 * head of the queue (by owner id), and a waiter that died is dropped once its liveness deadline
 * passes. Releases and renewals are the plain lock's: only acquiring differs.
 */
export class FairLockProtocol extends MutexProtocol {
  override readonly kind = 'fair';
  override readonly wakesByOwner = true;
  /** The queue in Redis orders everyone already. */
  override readonly localFifo = false;
  override readonly heartbeat = Math.floor(FAIR_WAITER_LIVENESS_MS / 3);

  override async attempt(redis: LockScriptTarget, owner: string, leaseTime: number, mode: AttemptMode): Promise<AttemptOutcome> {
    const k = this.keys;
    const [granted, value] = await acquireFairLockScript.run<[number, string | number]>(
      redis,
      [k.owners, k.fence, k.queue, k.timeouts, k.wakeChannel],
      [
        owner,
        leaseTime,
        FAIR_WAITER_LIVENESS_MS,
        mode.willWait ? '1' : '0',
        redis.publishCommand,
        mode.reentry ? '1' : '0',
        mode.hold,
        mode.waiting ? '1' : '0',
      ],
    );
    if (granted === -2) throw new LockKindConflictError(this.name, 'exclusive');
    return attemptOutcome(granted, value);
  }

  async leave(redis: LockScriptTarget, owner: string): Promise<void> {
    const k = this.keys;
    await leaveFairQueueScript.run(redis, [k.owners, k.queue, k.timeouts, k.wakeChannel], [owner, redis.publishCommand]);
  }
}

/**
 * The exclusive lock with `fair: true`: the mutex's owner hash, release and renewal, plus a wait
 * queue in Redis. Not in Redlock mode (one queue cannot span independent masters).
 */
export const FAIR: LockKindDefinition = {
  name: 'fair',
  scripts: [acquireFairLockScript, leaveFairQueueScript],
  redlock: { described: 'A fair lock (`fair: true`)' },
  protocol: (name, _variant, { keySpace }) => new FairLockProtocol(keySpace.lock(name)),
};
