/**
 * Redis Cluster for the tests. The topology code lives in tools/local-redis-cluster.ts so that the
 * benchmarks start a cluster the same way.
 *
 * - Suites that only *use* a cluster call {@link useSharedTestCluster}: the one cluster that
 *   global-setup started for the run (its nodes reach the workers in `REDIS_CLUSTER_NODES`), or,
 *   when the run was started without it, a private one for the suite.
 * - Suites that *disturb* a cluster (kill nodes, force failovers) must start their own with
 *   `startLocalRedisCluster` (tools/local-redis-cluster.ts) so that they never break the shared one
 *   under other suites.
 *
 * Without `redis-server`/`redis-cli` on PATH (and no `REDIS_CLUSTER_NODES`) these helpers throw
 * `NO_REDIS_CLUSTER_MESSAGE`, which says how to install them: cluster tests fail, never skip.
 */
import { clusterOptionFor } from './test-driver.js';
import { randomBytes } from 'node:crypto';
import { Test, type TestingModule } from '@nestjs/testing';
import { Cluster } from 'ioredis';
import { RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';
import {
  parseClusterNodes,
  provideRedisCluster,
  type ClusterNodeAddress,
  type LocalRedisCluster,
} from '../../tools/local-redis-cluster.js';

/** The shared cluster's nodes from `REDIS_CLUSTER_NODES`, or undefined when none was provided. */
export function sharedClusterNodes(): ClusterNodeAddress[] | undefined {
  const list = process.env.REDIS_CLUSTER_NODES;
  return list ? parseClusterNodes(list) : undefined;
}

export interface SharedTestCluster {
  /** Startup nodes for `RedisLockModule.forRoot({ redis: { cluster: nodes } })`; valid from `beforeAll` on. */
  nodes(): ClusterNodeAddress[];
  /** The topology handle (`masters()`, `replicas()`, `masterOfSlot()`); do not kill shared nodes. */
  topology(): LocalRedisCluster;
}

/**
 * The run's shared cluster (read-only use: never kill its nodes). Registers a `beforeAll` that
 * starts a private cluster when the run has none, and an `afterAll` that stops it.
 */
export function useSharedTestCluster(): SharedTestCluster {
  let handle: LocalRedisCluster | undefined;
  beforeAll(async () => {
    // With REDIS_CLUSTER_NODES set this only wraps the addresses; stop() then leaves the nodes alone.
    handle = await provideRedisCluster();
  }, 60_000);
  afterAll(async () => {
    await handle?.stop();
  });
  const started = (): LocalRedisCluster => {
    if (!handle) throw new Error('The test cluster is not started yet: use it from beforeAll or a test.');
    return handle;
  };
  return {
    nodes: () => [...started().nodes],
    topology: started,
  };
}

/** A key prefix no other spec uses. */
export function uniqueClusterPrefix(label = 'c'): string {
  return `${label}-${randomBytes(4).toString('hex')}`;
}

/** A Nest testing module with RedisLockModule on the cluster; closed with `app.close()`. */
export async function createClusterLockApp(nodes: ClusterNodeAddress[], options: RedisLockModuleOptions = {}): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLockModule.forRoot({ redis: clusterOptionFor(nodes), keyPrefix: uniqueClusterPrefix(), ...options })],
  }).compile();
  await moduleRef.init();
  return moduleRef;
}

/** A plain cluster client for looking at keys from outside the library. */
export function rawCluster(nodes: ClusterNodeAddress[]): Cluster {
  return new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: 1 } });
}
