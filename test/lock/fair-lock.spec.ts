import type { TestingModule } from '@nestjs/testing';
import { LockAcquireTimeoutError, LockService } from '../../lib/index.js';
import { createLockApp, rawRedis, uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

describe('fair lock', () => {
  const keyPrefix = uniquePrefix('fair');
  const redis = rawRedis();
  let apps: TestingModule[];
  let services: LockService[];
  const queueKey = (name: string) => new RedisKeySpace(keyPrefix).lock(name).queue;

  beforeAll(async () => {
    apps = await Promise.all([createLockApp({ keyPrefix }), createLockApp({ keyPrefix })]);
    services = apps.map((app) => app.get(LockService));
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    redis.disconnect();
  });

  it('hands the lock over in arrival order, across processes', async () => {
    const holder = await services[0].acquire('fifo', { fair: true });
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 6; i++) {
      waiters.push(
        services[i % 2].using('fifo', async () => void order.push(i), { fair: true, waitTimeout: 20_000 }).then(() => undefined),
      );
      await waitFor(async () => (await redis.llen(queueKey('fifo'))) === i + 1, 10_000, `waiter ${i + 1} to queue`);
    }
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('wakes only the head of the queue, by name', async () => {
    const subscriber = rawRedis();
    const messages: string[] = [];
    await subscriber.subscribe(new RedisKeySpace(keyPrefix).lock('named').wakeChannel);
    subscriber.on('message', (_channel, message) => messages.push(message));

    const holder = await services[0].acquire('named', { fair: true });
    const waiting = services[1].acquire('named', { fair: true, waitTimeout: 10_000 });
    await waitFor(async () => (await redis.llen(queueKey('named'))) === 1, 10_000, 'the waiter to queue');
    const [head] = await redis.lrange(queueKey('named'), 0, 0);
    await holder.release();
    const next = await waiting;
    await next.release();
    await waitFor(async () => messages.length >= 1, 10_000, 'a wake message');
    expect(messages[0]).toBe(`@${head}`);
    subscriber.disconnect();
  });

  it('skips a waiter that died in the queue once its liveness deadline passes', async () => {
    const holder = await services[0].acquire('ghost', { fair: true });
    // A waiter from a process that died: in the queue, never coming back to refresh its place.
    const [seconds, micros] = await redis.time();
    const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    await redis.rpush(queueKey('ghost'), 'dead-process:1');
    await redis.zadd(new RedisKeySpace(keyPrefix).lock('ghost').timeouts, nowMs + 500, 'dead-process:1');

    const waiting = services[1].acquire('ghost', { fair: true, waitTimeout: 15_000 });
    await waitFor(async () => (await redis.llen(queueKey('ghost'))) === 2, 10_000, 'two waiters to queue');
    await holder.release();
    const lock = await waiting; // would hang until waitTimeout if the dead waiter blocked the queue
    expect(lock.held).toBe(true);
    await lock.release();
    expect(await redis.llen(queueKey('ghost'))).toBe(0);
  });

  it('takes a waiter that gives up out of the queue', async () => {
    const holder = await services[0].acquire('quit', { fair: true });
    await expect(services[1].acquire('quit', { fair: true, waitTimeout: 200 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    expect(await redis.llen(queueKey('quit'))).toBe(0);
    await holder.release();
  });

  it('tryAcquire neither waits nor queues', async () => {
    const holder = await services[0].acquire('try', { fair: true });
    expect(await services[1].tryAcquire('try', { fair: true })).toBeNull();
    expect(await redis.llen(queueKey('try'))).toBe(0);
    await holder.release();
  });

  it('re-enters inside its own section', async () => {
    await services[0].using(
      'fair-re',
      async (outer) => {
        const inner = await services[0].tryAcquire('fair-re', { fair: true });
        expect(inner?.fencingToken).toBe(outer.fencingToken);
        await inner!.release();
      },
      { fair: true },
    );
    expect(await services[0].isLocked('fair-re')).toBe(false);
  });
});
