import type { Provider } from '@nestjs/common';
import { LeaderElections } from './leader-elections.js';
import { OneInstanceLeases } from './one-instance-leases.js';

/**
 * Work across instances: the leases of `@OnOneInstance` methods and the `@LeaderElection`
 * campaigns. Both stand on the `LockService` and `RedisLockEvents`; the elections also on Nest's
 * `DiscoveryService` (`DiscoveryModule`).
 */
export const schedulingProviders: Provider[] = [OneInstanceLeases, LeaderElections];
