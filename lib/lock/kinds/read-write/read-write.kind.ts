import { LockKindConflictError } from '../../../core/errors/lock-kind-conflict.error.js';
import { LockUpgradeError } from '../../../core/errors/lock-upgrade.error.js';
import type { LockKeys } from '../../../core/keys/redis-key-space.js';
import { acquireReadLockScript } from './acquire-read-lock.lua.js';
import { acquireWriteLockScript } from './acquire-write-lock.lua.js';
import { leaveReadWriteWritersScript } from './leave-read-write-writers.lua.js';
import { releaseReadWriteLockScript } from './release-read-write-lock.lua.js';
import { renewReadWriteLocksScript } from './renew-read-write-locks.lua.js';
import { attemptOutcome } from '../../protocols/attempt-reply.js';
import type { LockKindDefinition } from '../../protocols/lock-kind.js';
import type { AttemptMode, AttemptOutcome, LockScriptTarget, Renewal } from '../../protocols/lock-protocol.interface.js';
import { OwnerHashLockProtocol } from '../../protocols/owner-hash-lock.protocol.js';

/** How long a waiting writer blocks new readers without showing it is still waiting. */
const WRITER_LIVENESS_MS = 5_000;

/**
 * One side (read or write) of a read/write lock. Many readers or one writer; a waiting writer
 * stops new readers from joining, also on a lock that is free for an instant, so a stream of
 * readers cannot starve it. Inside a lock section, a writer may also take the read side
 * (downgrade); a reader asking for the write side is refused with `LockUpgradeError`, since two
 * readers upgrading at once would wait for each other forever. A name held by an exclusive lock
 * is refused with `LockKindConflictError`.
 *
 * Every acquire call is its own hold in Redis (member `<owner>:r#<hold>` / `<owner>:w#<hold>` with
 * its own lease deadline), so each acquire, release and renewal is safe to run twice.
 */
export class ReadWriteLockProtocol extends OwnerHashLockProtocol {
  readonly kind = 'read-write';
  readonly wakesByOwner = false;
  readonly localFifo = false;
  readonly heartbeat: number | undefined;

  constructor(
    keys: LockKeys,
    readonly side: 'read' | 'write',
  ) {
    super(keys);
    this.heartbeat = side === 'write' ? Math.floor(WRITER_LIVENESS_MS / 3) : undefined;
  }

  async attempt(redis: LockScriptTarget, owner: string, leaseTime: number, mode: AttemptMode): Promise<AttemptOutcome> {
    const k = this.keys;
    const keys = [k.owners, k.leases, k.waitingWriters, k.fence];
    const nested = mode.reentry ? '1' : '0';
    const [granted, value] =
      this.side === 'read'
        ? await acquireReadLockScript.run<[number, string | number]>(redis, keys, [owner, leaseTime, mode.hold, nested])
        : await acquireWriteLockScript.run<[number, string | number]>(redis, keys, [
            owner,
            leaseTime,
            WRITER_LIVENESS_MS,
            mode.willWait ? '1' : '0',
            mode.hold,
            nested,
          ]);
    if (granted === -1) throw new LockUpgradeError(this.name);
    if (granted === -2) throw new LockKindConflictError(this.name, 'read/write');
    return attemptOutcome(granted, value);
  }

  release(redis: LockScriptTarget, owner: string, hold: string): Promise<number> {
    return releaseReadWriteLockScript.run<number>(
      redis,
      [this.keys.owners, this.keys.leases, this.keys.wakeChannel],
      [this.member(owner, hold), redis.publishCommand],
    );
  }

  renewal(owner: string, hold: string): Renewal {
    return { script: renewReadWriteLocksScript, keys: [this.keys.owners, this.keys.leases], member: this.member(owner, hold) };
  }

  /** A writer that stops waiting no longer holds back new readers. */
  async leave(redis: LockScriptTarget, owner: string): Promise<void> {
    if (this.side === 'read') return;
    await leaveReadWriteWritersScript.run(redis, [this.keys.waitingWriters, this.keys.wakeChannel], [owner, redis.publishCommand]);
  }

  /** This hold's member of the leases zset: its holder field, '#', its hold id. */
  private member(owner: string, hold: string): string {
    return `${owner}:${this.side === 'read' ? 'r' : 'w'}#${hold}`;
  }
}

/**
 * The read/write lock (`readWrite(key).read()` / `.write()`): its variant is the side. It shares
 * the mutex's owner hash (a `mode` field tells it apart), so the mutex's inspection reads it.
 */
export const READ_WRITE: LockKindDefinition<'read' | 'write'> = {
  name: 'read-write',
  scripts: [
    acquireReadLockScript,
    acquireWriteLockScript,
    releaseReadWriteLockScript,
    renewReadWriteLocksScript,
    leaveReadWriteWritersScript,
  ],
  redlock: { described: 'A read/write lock (`readWrite()`)' },
  protocol: (name, side, { keySpace }) => new ReadWriteLockProtocol(keySpace.lock(name), side),
};
