import { clusterOptionFor } from '../support/test-driver.js';
import type { Cluster } from 'ioredis';
import { rawCluster, useSharedTestCluster } from '../support/redis-cluster.js';
import { describeDelayedJobScenarios } from './support/delayed-job-scenarios.js';

describe('delayed jobs on a Redis Cluster', () => {
  const cluster = useSharedTestCluster();
  let raw: Cluster | undefined;
  const target = {
    redis: () => clusterOptionFor(cluster.nodes()),
    raw: () => (raw ??= rawCluster(cluster.nodes())),
  };
  afterAll(() => raw?.disconnect());

  describeDelayedJobScenarios('one shard per topic', target, 1);
  describeDelayedJobScenarios('topics split into 3 shards', target, 3);
});
