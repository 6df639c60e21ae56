import { Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Pool } from 'pg';
import {
  DelayQueueService,
  LeaderElection,
  OnDelayed,
  OutboxUnavailableError,
  RedisLockError,
  type LeadershipHooks,
} from '../../lib/index.js';
import { inPgTransaction, PostgresJobOutbox } from '../../lib/outbox/postgres/index.js';
import { createRedisLockTestingModule } from '../../lib/testing/index.js';
import { findFreePort } from '../../lib/testing/local-redis-server.js';
import { createLockApp, rawRedis, testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { PgTransactions } from './support/outbox-harness.js';

/**
 * PostgreSQL unreachable when the application starts: bootstrap fails with `OutboxUnavailableError`
 * (naming the outbox, the address and what to check), not pg's raw ECONNREFUSED stack, and before it
 * fails nothing was taken: no leadership, no lease, no job.
 */
describe('the outbox with PostgreSQL unreachable at boot', () => {
  let redis: Redis;
  let port: number;
  let pool: Pool;
  const calls: string[] = [];

  @Injectable()
  @LeaderElection('boot.leader', { ttl: 10_000 })
  class BootLeader implements LeadershipHooks {
    onLeadershipAcquired(): void {
      calls.push('leadership');
    }
  }

  @Injectable()
  class BootJobs {
    @OnDelayed('boot.jobs')
    run(): void {
      calls.push('job');
    }
  }

  beforeAll(async () => {
    redis = rawRedis();
    // A loopback port nobody listens on: connecting is refused at once.
    port = await findFreePort();
    pool = new Pool({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
  });
  afterAll(async () => {
    await pool.end();
    redis.disconnect();
  });

  const bootWithOutbox = async (keyPrefix: string, outbox: PostgresJobOutbox) => {
    const app = await createRedisLockTestingModule({
      redis: testRedisUrl(),
      redisLock: { keyPrefix, delayQueue: { outbox } },
      providers: [BootLeader, BootJobs],
    }).compile();
    return app.init().then(
      async () => {
        await app.close();
        return undefined;
      },
      (error: unknown) => error,
    );
  };

  it.each([
    ['without the development migration', false],
    ['with applyMigrationAtStart', true],
  ])('fails bootstrap with OutboxUnavailableError naming the outbox, the address and what to check (%s)', async (_what, migrate) => {
    const keyPrefix = uniquePrefix('outbox-boot');
    // A job already due on the handler's topic: a consumer started before the outbox is ready would take it.
    const producer = await createLockApp({ keyPrefix });
    await producer.get(DelayQueueService).schedule('boot.jobs', { n: 1 }, { id: 'due-1' });
    await producer.close();
    calls.length = 0;

    const outbox = new PostgresJobOutbox({
      transaction: inPgTransaction(new PgTransactions(pool).current),
      relay: pool,
      applyMigrationAtStart: migrate,
    });
    const error = await bootWithOutbox(keyPrefix, outbox);

    expect(error).toBeInstanceOf(OutboxUnavailableError);
    expect(error).toBeInstanceOf(RedisLockError);
    const refused = error as OutboxUnavailableError;
    expect(refused.code).toBe('OUTBOX_UNAVAILABLE');
    expect(refused.address).toBe(`127.0.0.1:${port}`);
    expect(refused.message).toContain('transactional outbox');
    expect(refused.message).toContain('PostgresJobOutbox');
    expect(refused.message).toContain(`127.0.0.1:${port}`);
    expect(refused.message).toContain('ECONNREFUSED');
    expect(refused.message).toMatch(/Check that PostgreSQL is running/);
    expect((refused.cause as { code?: string } | undefined)?.code ?? (refused.cause as AggregateError)?.errors?.[0]?.code).toBe(
      'ECONNREFUSED',
    );

    // Nothing was taken before the outbox was found unreachable.
    expect(calls).toEqual([]);
    expect(await redis.exists(`${keyPrefix}:lock:{boot.leader}`)).toBe(0);
    expect(await redis.zscore(`${keyPrefix}:dq:{boot.jobs}:due`, 'due-1')).not.toBeNull();
    expect(await redis.zcard(`${keyPrefix}:dq:{boot.jobs}:active`)).toBe(0);
    await redis.del(...(await redis.keys(`${keyPrefix}:*`)));
  });
});
