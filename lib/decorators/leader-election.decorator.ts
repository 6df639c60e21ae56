import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { LEADER_ELECTION_METADATA } from '../scheduling/scheduling.constants.js';
import { resolveLeaseDeclaration } from './resolve-lease-declaration.js';

/**
 * Options of `@LeaderElection`.
 */
export interface LeaderElectionOptions {
  /**
   * Lease of the leader in ms (at least 100): renewed every third of it; a leader that died is
   * replaced within this long. Default 30 000.
   */
  ttl?: number;
}

/**
 * Elects one leader among the instances of the application for a singleton provider: every instance
 * campaigns from `onApplicationBootstrap`, the one holding the lock `key` leads and renews its lease,
 * the others wait (woken at once when the leader steps down, and after `ttl` when it died).
 * The provider implements `onLeadershipAcquired(lock)` and/or `onLeadershipLost(lock)` (see
 * `LeadershipHooks`); `lock.signal` aborts when leadership ends and `lock.fencingToken` orders the terms.
 * A clean shutdown steps down at once.
 *
 * @example
 * \@Injectable()
 * \@LeaderElection('outbox.relay', { ttl: 5_000 })
 * export class OutboxRelay implements LeadershipHooks {
 *   onLeadershipAcquired(lock: LockHandle) {
 *     void this.relayUntil(lock.signal);
 *   }
 * }
 */
export function LeaderElection(key: string, options?: LeaderElectionOptions): ClassDecorator {
  return (target) => {
    const location = `@LeaderElection on ${target.name}`;
    if (typeof key !== 'string') {
      throw new InvalidOptionsError('key', `give the leader lock's name as the first argument, a string (in ${location})`);
    }
    const declaration = resolveLeaseDeclaration({ ...(options ?? {}), key }, ['key', 'ttl'], key, location);
    const prototype = target.prototype as Record<string, unknown>;
    if (typeof prototype.onLeadershipAcquired !== 'function' && typeof prototype.onLeadershipLost !== 'function') {
      throw new InvalidOptionsError(
        '@LeaderElection',
        `${target.name} has neither onLeadershipAcquired(lock) nor onLeadershipLost(lock); implement LeadershipHooks`,
      );
    }
    Reflect.defineMetadata(LEADER_ELECTION_METADATA, declaration, target);
  };
}
