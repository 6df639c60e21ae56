import { redisOptionFor } from '../../support/test-driver.js';
import type { Provider, Type } from '@nestjs/common';
import { closeRedisLockTestingModule, createRedisLockTestingModule } from '../../../lib/testing/index.js';
import type { TestingModule } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { initOrCloseConnections, testRedisUrl, uniquePrefix, useRawRedis } from '../../support/test-app.js';

/**
 * One "instance" of an application using @OnOneInstance / @LeaderElection: RedisLockModule on the
 * run's Redis under `keyPrefix` (give several apps the same prefix to make them contend) and the
 * given providers.
 */
export async function createSchedulingApp(keyPrefix: string, providers: Array<Provider | Type>): Promise<TestingModule> {
  const app = await createRedisLockTestingModule({
    redis: redisOptionFor(testRedisUrl()),
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

/** Instances a test starts on a key prefix of its own, and a plain client of the run's Redis. */
export interface SchedulingInstances {
  /** The running test's key prefix: a fresh one for each test. */
  readonly keyPrefix: string;
  /** The instances the test started, in order; closed after it. */
  readonly apps: TestingModule[];
  readonly redis: Redis;
  /** Starts `count` instances with `providers` on `keyPrefix`, one after the other, and adds them to `apps`. */
  start(providers: Array<Provider | Type>, count?: number): Promise<void>;
}

/** Instances of a describe block's tests: each test gets a fresh key prefix; its instances are closed after it (`closeSchedulingApps`). */
export function useSchedulingInstances(label: string): SchedulingInstances {
  let keyPrefix = '';
  const apps: TestingModule[] = [];
  const redis = useRawRedis();
  beforeEach(() => {
    keyPrefix = uniquePrefix(label);
  });
  afterEach(() => closeSchedulingApps(apps.splice(0)));
  return {
    get keyPrefix() {
      return keyPrefix;
    },
    apps,
    redis,
    async start(providers, count = 1) {
      for (let i = 0; i < count; i++) apps.push(await createSchedulingApp(keyPrefix, providers));
    },
  };
}
