import type { RedisConnectionOptions } from '../../lib/index.js';

/** The drivers a run can put under the module (`REDIS_LOCK_TEST_DRIVER`). */
const DRIVERS = ['ioredis', 'iovalkey', 'node-redis', 'valkey-glide'] as const;
type TestDriver = (typeof DRIVERS)[number];

/**
 * The driver this run's module connections use: `REDIS_LOCK_TEST_DRIVER` (the per-driver lanes of
 * tools/run-tests.js set it), ioredis by default. Specs that build their module through the
 * support helpers (createLockApp, createDelayApp, createClusterLockApp, useClusterQueues) run on it;
 * the plain clients specs use to look at keys from outside stay ioredis.
 */
export function testDriver(): TestDriver {
  const name = process.env.REDIS_LOCK_TEST_DRIVER ?? 'ioredis';
  if (!(DRIVERS as readonly string[]).includes(name)) {
    throw new Error(`REDIS_LOCK_TEST_DRIVER=${name}: expected one of ${DRIVERS.join(', ')}`);
  }
  return name as TestDriver;
}

/** The module's `redis` option for a server at `url`, on the run's driver. */
export function redisOptionFor(url: string): RedisConnectionOptions {
  const driver = testDriver();
  return driver === 'ioredis' ? url : ({ driver, url } as RedisConnectionOptions);
}

/** The module's `redis` option for a cluster whose seed nodes are `nodes`, on the run's driver. */
export function clusterOptionFor(nodes: ReadonlyArray<{ host: string; port: number }>): RedisConnectionOptions {
  const driver = testDriver();
  switch (driver) {
    case 'ioredis':
    case 'iovalkey':
      return driver === 'ioredis' ? { cluster: [...nodes] } : { driver, cluster: [...nodes] };
    case 'node-redis':
      return { driver, rootNodes: nodes.map((node) => ({ url: `redis://${node.host}:${node.port}` })) };
    case 'valkey-glide':
      return { driver, addresses: nodes.map((node) => ({ host: node.host, port: node.port })), clusterMode: true };
  }
}
