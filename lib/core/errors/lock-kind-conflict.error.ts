import { RedisLockError } from './redis-lock.error.js';

/**
 * The kinds of lock that share a name's Redis key: the exclusive lock (plain or fair) and the read/write lock.
 *
 * @inline
 */
export type LockKind = 'exclusive' | 'read/write';

/**
 * A lock name was asked for as one kind of lock while the other kind holds it: an exclusive lock
 * (`acquire`, `using`, `@WithLock` without `mode`) and a read/write lock (`readWrite()`,
 * `@WithLock(..., { mode })`) on the same name. One name is one kind of lock, so this is refused at
 * once rather than granted twice or waited for. Use the same kind everywhere for a name, or
 * different names for different kinds.
 */
export class LockKindConflictError extends RedisLockError {
  readonly code = 'LOCK_KIND_CONFLICT';

  constructor(
    /** The lock's name. */
    readonly key: string,
    /** The kind that was asked for; the other kind holds the name. */
    readonly requested: LockKind,
  ) {
    const holding: LockKind = requested === 'exclusive' ? 'read/write' : 'exclusive';
    super(
      `Cannot take ${JSON.stringify(key)} as ${article(requested)} lock: it is held as ${article(holding)} lock. ` +
        'One name is one kind of lock: use the same kind (exclusive, or read/write with its read and write sides) ' +
        'everywhere for this name, or give the two uses different names.',
    );
  }
}

function article(kind: LockKind): string {
  return kind === 'exclusive' ? 'an exclusive' : 'a read/write';
}
