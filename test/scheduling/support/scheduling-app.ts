import type { Provider, Type } from '@nestjs/common';
import { closeRedisLockTestingModule, createRedisLockTestingModule } from '../../../lib/testing/index.js';
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

/** Closes every app of a spec; the last one also removes the keys under their shared prefix. */
export async function closeSchedulingApps(apps: readonly TestingModule[]): Promise<void> {
  for (const [i, app] of apps.entries()) {
    if (i < apps.length - 1) await app.close().catch(() => undefined);
    else await closeRedisLockTestingModule(app, { removeKeys: true }).catch(() => undefined);
  }
}
