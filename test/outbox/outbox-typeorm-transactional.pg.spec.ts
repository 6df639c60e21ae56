import { jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { addTransactionalDataSource, initializeTransactionalContext, runInTransaction as runInTypeOrmTransaction, StorageDriver } from 'typeorm-transactional';
import { inTypeOrmTransaction, PostgresJobOutbox } from '../../lib/outbox/postgres/index.js';
import { TypeOrmTransactionalSynchronizer } from '../../lib/transaction-adapters/typeorm-transactional.js';
import { startLocalPostgres, type LocalPostgres } from '../support/postgres.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { holdsWithin, waitFor } from '../support/timing.js';
import { initRedisLockTestingModule } from '../../lib/testing/index.js';
import { DelayQueueService } from '../../lib/index.js';
import type { TestingModule } from '@nestjs/testing';
import type { RecordedRun } from './support/outbox-harness.js';

jest.setTimeout(120_000);

describe('transactional outbox with typeorm-transactional (PostgreSQL)', () => {
  let postgres: LocalPostgres;
  let dataSource: DataSource;
  let app: TestingModule;
  const runs: RecordedRun[] = [];

  beforeAll(async () => {
    initializeTransactionalContext({ storageDriver: StorageDriver.ASYNC_LOCAL_STORAGE });
    postgres = await startLocalPostgres();
    dataSource = addTransactionalDataSource(
      new DataSource({ type: 'postgres', host: postgres.host, port: postgres.port, username: postgres.user, database: postgres.database, poolSize: 4 }),
    );
    await dataSource.initialize();
    await dataSource.query('CREATE TABLE tt_orders (ref text PRIMARY KEY)');
    app = await initRedisLockTestingModule({
      redis: testRedisUrl(),
      redisLock: {
        keyPrefix: uniquePrefix('tt-outbox'),
        transactions: new TypeOrmTransactionalSynchronizer(),
        delayQueue: {
          // typeorm-transactional makes dataSource.manager the current transaction's manager.
          outbox: new PostgresJobOutbox({ transaction: inTypeOrmTransaction(() => dataSource.manager), relay: dataSource, applyMigrationAtStart: true }),
        },
      },
    });
    app.get(DelayQueueService).consume('order.expire', (payload, job) => void runs.push({ id: job.id, payload, at: Date.now() }));
  });
  afterAll(async () => {
    await app?.close();
    await dataSource?.destroy();
    await postgres?.stop();
  });

  const place = (ref: string, fail = false) =>
    runInTypeOrmTransaction(async () => {
      await dataSource.query('INSERT INTO tt_orders (ref) VALUES ($1)', [ref]);
      const id = await app.get(DelayQueueService).schedule('order.expire', { ref }, { id: `expire:${ref}` });
      if (fail) throw new Error('payment declined');
      return id;
    });

  it('the order and its job commit together; a rolled-back order schedules nothing', async () => {
    const id = await place('b-1');
    await expect(place('b-2', true)).rejects.toThrow('payment declined');
    await waitFor(() => runs.length === 1 || undefined, 30_000, 'the committed order\'s job');
    expect(runs[0]).toMatchObject({ id, payload: { ref: 'b-1' } });
    expect(await dataSource.query('SELECT ref FROM tt_orders')).toEqual([{ ref: 'b-1' }]);
    // The relay DELETEs a row after Redis answered its write: the job may run first. Wait for the DELETE.
    const outboxRows = async () => (await dataSource.query('SELECT count(*)::int AS n FROM redis_lock_job_outbox'))[0].n as number;
    await waitFor(async () => (await outboxRows()) === 0, 30_000, 'the relay to delete the relayed outbox row', { every: 50 });
    // The rolled-back order left no row to relay: no second run, ever.
    expect(await holdsWithin(() => runs.length > 1, 1_500)).toBe(false);
  });

  it('outside a transaction, dataSource.manager is not a transaction: schedule() writes straight to Redis', async () => {
    const id = await app.get(DelayQueueService).schedule('order.expire', { ref: 'direct' });
    await waitFor(() => runs.some((run) => run.id === id) || undefined, 30_000, 'the direct job');
  });
});
