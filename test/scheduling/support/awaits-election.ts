import type { LeadershipHooks, LockHandle } from '../../../lib/index.js';
import { deferred } from '../../support/timing.js';

/** A leader's hooks that a test awaits: `elected` resolves with the lock of its first term. Extend it with `@LeaderElection`. */
export class AwaitsElection implements LeadershipHooks {
  readonly elected = deferred<LockHandle>();
  onLeadershipAcquired(lock: LockHandle): void {
    this.elected.resolve(lock);
  }
}
