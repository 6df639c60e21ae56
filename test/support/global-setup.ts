import type { Config } from '@jest/types';
import { formatClusterNodes, provideRedisCluster, type LocalRedisCluster } from '../../tools/local-redis-cluster.js';
import { provideTestRedis, type TestRedis } from './redis-for-tests.js';

declare global {
  var __TEST_REDIS__: TestRedis | undefined;
  var __TEST_REDIS_CLUSTER__: LocalRedisCluster | undefined;
}

/**
 * Starts the run's Redis once, and the run's Redis Cluster when the run includes cluster suites;
 * workers inherit their addresses through the environment (`REDIS_URL`, `REDIS_CLUSTER_NODES`).
 */
export default async function globalSetup(globalConfig?: Config.GlobalConfig): Promise<void> {
  const [redis, cluster] = await Promise.all([
    provideTestRedis(),
    runIncludesClusterSuites(globalConfig) ? provideRedisCluster() : Promise.resolve(undefined),
  ]);
  globalThis.__TEST_REDIS__ = redis;
  process.env.REDIS_URL = redis.url;
  process.env.TEST_REDIS_SOURCE = redis.source;
  console.log(`\nTests use Redis at ${redis.url} (${redis.source}).`);
  if (cluster) {
    globalThis.__TEST_REDIS_CLUSTER__ = cluster;
    process.env.REDIS_CLUSTER_NODES = formatClusterNodes(cluster.nodes);
    console.log(`Cluster tests use Redis Cluster ${process.env.REDIS_CLUSTER_NODES} (${cluster.source}).`);
  }
}

/**
 * A run filtered to other folders (`jest test/lock`) does not pay for six cluster nodes. When in
 * doubt, start it: a cluster suite that finds no shared cluster starts its own, slower, one.
 */
function runIncludesClusterSuites(globalConfig?: Config.GlobalConfig): boolean {
  const patterns: string[] = globalConfig?.testPathPatterns?.patterns ?? [];
  if (patterns.length === 0) return true;
  const probe = `${globalConfig?.rootDir ?? process.cwd()}/test/cluster/`;
  return patterns.some((pattern) => {
    if (pattern.includes('cluster')) return true;
    try {
      return new RegExp(pattern, 'i').test(probe);
    } catch {
      return true;
    }
  });
}
