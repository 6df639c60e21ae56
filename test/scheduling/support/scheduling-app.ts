import type { Provider, Type } from '@nestjs/common';
import { createRedisLockTestingModule } from '../../../lib/testing/index.js';
import type { TestingModule } from '@nestjs/testing';
import { initOrCloseConnections, testRedisUrl } from '../../support/test-app.js';

/**
 * One "instance" of an application using @OnOneInstance / @LeaderElection: RedisLockModule on the
 * run's Redis under `keyPrefix` (give several apps the same prefix to make them contend) and the
 * given providers.
 */
export async function createSchedulingApp(keyPrefix: string, providers: Array<Provider | Type>): Promise<TestingModule> {
  const app = await createRedisLockTestingModule({
    redis: testRedisUrl(),
    redisLock: { keyPrefix },
    providers,
  }).compile();
  // A bootstrap error (what some specs expect) must not leave the module's connections open.
  return initOrCloseConnections(app);
}
