import { clusterOptionFor } from '../../support/test-driver.js';
import { Test, type TestingModule } from '@nestjs/testing';
import { DelayQueueService, RedisLockModule, type Consumer } from '../../../lib/index.js';
import { uniqueClusterPrefix, useSharedTestCluster } from '../../support/redis-cluster.js';
import { muteNestLogger } from '../../support/mute-nest-logger.js';

/** What `useClusterQueues` gives a describe block. */
export interface ClusterQueues {
  /**
   * `n` instances of one service on the shared cluster: applications sharing a fresh key prefix,
   * started one after the other. `shards` gives topics their shard count (a count of 1 leaves the
   * topic plain, as if not named).
   */
  start(n: number, shards?: Readonly<Record<string, number>>): Promise<DelayQueueService[]>;
  /** The consumers a test pushes here are closed after the block, before the applications. */
  readonly consumers: Consumer[];
}

/**
 * Delay-queue instances on the run's shared Redis Cluster for the specs of one describe block:
 * every application is closed after the block, Nest's error and warning logs are muted.
 */
export function useClusterQueues(label: string): ClusterQueues {
  const cluster = useSharedTestCluster();
  const apps: TestingModule[] = [];
  const consumers: Consumer[] = [];

  beforeAll(() => muteNestLogger('error', 'warn'));
  afterAll(async () => {
    await Promise.all(consumers.map((consumer) => consumer.close()));
    await Promise.all(apps.map((app) => app.close()));
  });

  async function queueOn(keyPrefix: string, shards: Readonly<Record<string, number>>): Promise<DelayQueueService> {
    const sharded = Object.entries(shards).filter(([, count]) => count > 1);
    const app = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRoot({
          redis: clusterOptionFor(cluster.nodes()),
          keyPrefix,
          delayQueue: sharded.length > 0 ? { topics: Object.fromEntries(sharded.map(([topic, count]) => [topic, { shards: count }])) } : {},
        }),
      ],
    }).compile();
    await app.init();
    apps.push(app);
    return app.get(DelayQueueService);
  }

  return {
    async start(n, shards = {}) {
      const keyPrefix = uniqueClusterPrefix(label);
      const queues: DelayQueueService[] = [];
      for (let i = 0; i < n; i++) queues.push(await queueOn(keyPrefix, shards));
      return queues;
    },
    consumers,
  };
}
