import { RedisLockError } from './redis-lock.error.js';

/**
 * Set as `handle.signal.reason` when a held lock's lease was lost: its key expired or was deleted,
 * another owner took it, or Redis could not confirm a renewal before the lease ran out.
 * Work guarded by the lock should stop; a write to another store should carry the fencing token.
 */
export class LockLostError extends RedisLockError {
  readonly code = 'LOCK_LOST';

  constructor(
    /** The lock's name as given to `acquire` (names joined by `,` for a multi-key lock). */
    readonly key: string,
    /** The fencing token of the hold that was lost. */
    readonly fencingToken: string,
    /**
     * `'expired'`: the lease ended before it was extended; `'not-owner'`: Redis no longer lists this owner;
     * `'unconfirmed'`: Redis could not be reached to renew it before the lease ran out.
     */
    readonly reason: 'expired' | 'not-owner' | 'unconfirmed',
  ) {
    super(
      `Lock ${JSON.stringify(key)} (fencing token ${fencingToken}) was lost: ${describe(reason)}. ` +
        'Stop the work it guarded; writes elsewhere should be fenced with the token so a stale holder is rejected.',
    );
  }
}

function describe(reason: LockLostError['reason']): string {
  switch (reason) {
    case 'expired':
      return 'its lease ended before it was extended';
    case 'not-owner':
      return 'Redis no longer lists this owner (the key expired or was deleted, and may now be held by someone else)';
    case 'unconfirmed':
      return 'Redis could not be reached to renew it before its lease ran out';
  }
}
