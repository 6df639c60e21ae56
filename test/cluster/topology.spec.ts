import { Cluster } from 'ioredis';
import { useSharedTestCluster } from '../support/redis-cluster.js';

describe('Redis Cluster test topology', () => {
  const cluster = useSharedTestCluster();

  it('is a healthy cluster of 3 masters, each with a linked replica', async () => {
    const client = new Cluster(cluster.nodes());
    try {
      expect(String(await client.cluster('INFO'))).toMatch(/cluster_state:ok/);
      const masters = await cluster.topology().masters();
      const replicas = await cluster.topology().replicas();
      expect(masters).toHaveLength(3);
      expect(replicas).toHaveLength(3);
      expect(new Set(replicas.map((r) => r.masterPort))).toEqual(new Set(masters.map((m) => m.port)));
    } finally {
      client.disconnect();
    }
  });
});
