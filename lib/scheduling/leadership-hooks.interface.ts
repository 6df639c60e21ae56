import type { LockHandle } from '../lock/interfaces/lock-handle.interface.js';

/**
 * The hooks a `@LeaderElection` provider implements (at least one of them).
 *
 * @example
 * \@Injectable()
 * \@LeaderElection('billing.leader', { ttl: 10_000 })
 * export class BillingLeader implements LeadershipHooks {
 *   onLeadershipAcquired(lock: LockHandle) {
 *     void this.billing.runUntil(lock.signal, { fencingToken: lock.fencingToken });
 *   }
 *   async onLeadershipLost(lock: LockHandle) {
 *     await this.billing.stopped();   // the next leader starts once this resolves (or after ttl)
 *   }
 * }
 */
export interface LeadershipHooks {
  /**
   * This instance is the leader now. `lock.signal` aborts when leadership ends (lost, or handed
   * back); `lock.fencingToken` grows with every term, so writes fenced with it reject an older
   * leader. Not awaited by the election: start long work in the background and stop it on `signal`.
   */
  onLeadershipAcquired?(lock: LockHandle): unknown;
  /**
   * Leadership ended; `lock.signal` is already aborted (`LockLostError` when the lease was lost,
   * `LeadershipSteppedDownError` when this instance handed it back). On a step-down the lock is
   * released only after this hook settles (at most `ttl`), so waiting here for the leader's work
   * to stop keeps two leaders from working at once.
   */
  onLeadershipLost?(lock: LockHandle): unknown;
}
