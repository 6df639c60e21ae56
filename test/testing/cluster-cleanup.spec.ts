/**
 * `nestjs-redis-lock/testing`'s cleanup on a Redis Cluster: the module's keys are spread over every
 * master (one hash tag per lock or topic), and each master is scanned and cleared.
 */
import { LockService } from 'nestjs-redis-lock';
import { closeRedisLockTestingModule, initRedisLockTestingModule, removeRedisLockKeys, uniqueKeyPrefix } from 'nestjs-redis-lock/testing';
import { rawCluster, useSharedTestCluster } from '../support/redis-cluster.js';
import { scanKeys } from '../support/redis-probes.js';

describe('testing-module cleanup on a Redis Cluster', () => {
  const cluster = useSharedTestCluster();

  /** Every key matching `pattern`, from every master. */
  async function keysOnEveryMaster(pattern: string): Promise<string[]> {
    const client = rawCluster(cluster.nodes());
    try {
      await client.ping();
      const keys: string[] = [];
      for (const node of client.nodes('master')) keys.push(...(await scanKeys(node, pattern)));
      return keys;
    } finally {
      client.disconnect();
    }
  }

  /** Fencing counters of 30 locks: their hash tags land on every master. */
  async function takeAndRelease(locks: LockService): Promise<void> {
    for (let i = 0; i < 30; i++) await (await locks.acquire(`order:${i}`)).release();
  }

  it('closeRedisLockTestingModule removes the module keys from every master', async () => {
    const keyPrefix = uniqueKeyPrefix('cluster');
    const moduleRef = await initRedisLockTestingModule({ redis: { cluster: cluster.nodes() }, redisLock: { keyPrefix } });
    await takeAndRelease(moduleRef.get(LockService));
    const before = await keysOnEveryMaster(`${keyPrefix}:*`);
    expect(before).toHaveLength(30);

    await closeRedisLockTestingModule(moduleRef, { removeKeys: true });
    expect(await keysOnEveryMaster(`${keyPrefix}:*`)).toEqual([]);
  });

  it('removeRedisLockKeys clears a running module on every master', async () => {
    const keyPrefix = uniqueKeyPrefix('cluster');
    const moduleRef = await initRedisLockTestingModule({ redis: { cluster: cluster.nodes() }, redisLock: { keyPrefix } });
    try {
      await takeAndRelease(moduleRef.get(LockService));
      await expect(removeRedisLockKeys(moduleRef)).resolves.toBe(30);
      expect(await keysOnEveryMaster(`${keyPrefix}:*`)).toEqual([]);
    } finally {
      await closeRedisLockTestingModule(moduleRef, { removeKeys: true });
    }
  });
});
