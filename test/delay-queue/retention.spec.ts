import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { rawRedis } from '../support/test-app.js';
import { createDelayApp } from './support/delay-test-app.js';
import { sleep, waitFor } from '../support/timing.js';

describe('Retention: Redis memory stays bounded', () => {
  let redis: Redis;
  beforeAll(() => {
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined); // dead letters on purpose
    redis = rawRedis();
  });
  afterAll(() => {
    jest.restoreAllMocks();
    redis.disconnect();
  });

  it('keeps at most deadLetterMaxCount dead letters, the newest ones, and drops the bodies of the others', async () => {
    const t = await createDelayApp({ delayQueue: { maxAttempts: 1, retention: { deadLetterMaxCount: 3 } } });
    try {
      const consumer = t.queue.consume<number>('count', (n) => {
        throw new Error(`fail ${n}`);
      });
      for (let i = 0; i < 6; i++) {
        await t.queue.schedule('count', i, { id: `d${i}` });
        await waitFor(
          async () => (await t.queue.get('count', `d${i}`))?.state === 'dead' || (await t.queue.get('count', `d${i}`)) === null,
          5_000,
          `d${i} to die`,
        );
      }
      await consumer.close();
      const dead = await t.queue.deadLetters('count');
      expect(dead.map((d) => d.id)).toEqual(['d5', 'd4', 'd3']);
      expect(await redis.hlen(`${t.keyPrefix}:dq:{count}:jobs`)).toBe(3);
    } finally {
      await t.close();
    }
  });

  it('drops dead letters older than deadLetterMaxAge', async () => {
    const t = await createDelayApp({ delayQueue: { maxAttempts: 1, retention: { deadLetterMaxAge: 300 } } });
    try {
      const consumer = t.queue.consume(
        'age',
        () => {
          throw new Error('fail');
        },
        { maxIdleWait: 200 },
      );
      await t.queue.schedule('age', 1);
      await waitFor(async () => (await t.queue.stats('age')).dead === 1, 5_000, 'a dead letter');
      await sleep(400);
      // The consumer's next look at the topic trims it, even with no new failure.
      await waitFor(async () => (await t.queue.stats('age')).dead === 0, 5_000, 'the old dead letter to go');
      expect(await redis.hlen(`${t.keyPrefix}:dq:{age}:jobs`)).toBe(0);
      await consumer.close();
    } finally {
      await t.close();
    }
  });

  it('keeps no dead letters at all with deadLetterMaxCount 0', async () => {
    const t = await createDelayApp({ delayQueue: { maxAttempts: 1, retention: { deadLetterMaxCount: 0 } } });
    try {
      let runs = 0;
      const consumer = t.queue.consume('none', () => {
        runs++;
        throw new Error('fail');
      });
      await t.queue.schedule('none', 1);
      await waitFor(() => runs === 1, 5_000, 'the run');
      await waitFor(async () => (await redis.exists(`${t.keyPrefix}:dq:{none}:jobs`)) === 0, 5_000, 'the job to be dropped');
      expect((await t.queue.stats('none')).dead).toBe(0);
      await consumer.close();
    } finally {
      await t.close();
    }
  });
});
