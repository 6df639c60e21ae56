import { GlideClient } from '@valkey/valkey-glide';
import type { TestingModule } from '@nestjs/testing';
import { createClient } from 'redis';
import { DelayQueueService, InvalidOptionsError, RedisConnectionError } from '../../../lib/index.js';
import { initRedisLockTestingModule, uniqueKeyPrefix } from '../../../lib/testing/index.js';
import { failOnUnhandledRejections } from '../../support/fail-on-unhandled-rejections.js';
import { useLocalRedisServer } from '../../support/use-local-redis-server.js';

/*
 * Review of issue 38: an app's client on a database other than 0. The module's own connections
 * (blocking reader, subscriber) must read the same database as the commands it sends on the app's
 * client, or the bootstrap must refuse the mismatch. A consumer idle on BZPOPMIN must be woken by
 * a newly due job within a second or two, not by its maxIdleWait.
 */

failOnUnhandledRejections();

async function deliveryLatency(app: TestingModule): Promise<number> {
  const jobs = app.get(DelayQueueService);
  const seen: number[] = [];
  const consumer = jobs.consume('db-topic', () => void seen.push(performance.now()), { maxIdleWait: 30_000 });
  try {
    await jobs.schedule('db-topic', { n: 0 });
    for (let i = 0; i < 400 && seen.length < 1; i++) await new Promise((r) => setTimeout(r, 25));
    if (seen.length < 1) return Infinity; // not even the first job within 10 s
    await new Promise((r) => setTimeout(r, 500));
    const sent = performance.now();
    await jobs.schedule('db-topic', { n: 1 }, { delay: 100 });
    for (let i = 0; i < 400 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 25));
    return seen.length < 2 ? Infinity : seen[1]! - sent;
  } finally {
    await consumer.close();
  }
}

describe('review-38: an app client on database 3', () => {
  const server = useLocalRedisServer();

  it('GLIDE { client (databaseId 3), url without a database }: refused at bootstrap, or jobs still wake the consumer', async () => {
    const client = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: server.port }], databaseId: 3 });
    let app: TestingModule | undefined;
    try {
      try {
        app = await initRedisLockTestingModule({
          redis: { client, url: server.url } as never,
          redisLock: { keyPrefix: uniqueKeyPrefix('r38') },
        });
      } catch (error) {
        // a refusal naming the mismatch is a correct answer too
        expect(error instanceof InvalidOptionsError || error instanceof RedisConnectionError).toBe(true);
        return;
      }
      expect(await deliveryLatency(app)).toBeLessThan(3_000);
    } finally {
      await app?.close();
      client.close();
    }
  });

  it('node-redis { client (database 3) }: jobs wake the idle consumer', async () => {
    const client = createClient({ url: server.url, database: 3 });
    client.on('error', () => undefined);
    await client.connect();
    const app = await initRedisLockTestingModule({ redis: { client } as never, redisLock: { keyPrefix: uniqueKeyPrefix('r38') } });
    try {
      expect(await deliveryLatency(app)).toBeLessThan(3_000);
    } finally {
      await app.close();
      await client.close();
    }
  });

  it("GLIDE { driver: 'valkey-glide', url: …/3 }: jobs wake the idle consumer", async () => {
    const app = await initRedisLockTestingModule({
      redis: { driver: 'valkey-glide', url: `${server.url}/3` } as never,
      redisLock: { keyPrefix: uniqueKeyPrefix('r38') },
    });
    try {
      expect(await deliveryLatency(app)).toBeLessThan(3_000);
    } finally {
      await app.close();
    }
  });
});
