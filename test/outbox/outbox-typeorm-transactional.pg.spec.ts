import { jest } from '@jest/globals';
import type { DataSource } from 'typeorm';
import {
  addTransactionalDataSource,
  initializeTransactionalContext,
  runInTransaction as runInTypeOrmTransaction,
  StorageDriver,
} from 'typeorm-transactional';
import { inTypeOrmTransaction, PostgresJobOutbox } from '../../lib/outbox/postgres/index.js';
import { TypeOrmTransactionalSynchronizer } from '../../lib/transaction-adapters/typeorm-transactional.js';
import { startPostgresWithDataSource, type PostgresWithDataSource } from '../support/postgres-data-source.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { initRedisLockTestingModule } from '../../lib/testing/index.js';
import { DelayQueueService } from '../../lib/index.js';
import type { TestingModule } from '@nestjs/testing';
import type { RecordedRun } from './support/outbox-harness.js';
import { expectOrderAndJobCommitTogether } from './support/orders-commit-with-jobs.js';

jest.setTimeout(120_000);

describe('transactional outbox with typeorm-transactional (PostgreSQL)', () => {
  let pg: PostgresWithDataSource | undefined;
  let dataSource: DataSource;
  let app: TestingModule;
  const runs: RecordedRun[] = [];

  beforeAll(async () => {
    initializeTransactionalContext({ storageDriver: StorageDriver.ASYNC_LOCAL_STORAGE });
    pg = await startPostgresWithDataSource((ds) => ds.query('CREATE TABLE tt_orders (ref text PRIMARY KEY)'), addTransactionalDataSource);
    dataSource = pg.dataSource;
    app = await initRedisLockTestingModule({
      redis: testRedisUrl(),
      redisLock: {
        keyPrefix: uniquePrefix('tt-outbox'),
        transactions: new TypeOrmTransactionalSynchronizer(),
        delayQueue: {
          // typeorm-transactional makes dataSource.manager the current transaction's manager.
          outbox: new PostgresJobOutbox({
            transaction: inTypeOrmTransaction(() => dataSource.manager),
            relay: dataSource,
            applyMigrationAtStart: true,
          }),
        },
      },
    });
    app.get(DelayQueueService).consume('order.expire', (payload, job) => void runs.push({ id: job.id, payload, at: Date.now() }));
  });
  afterAll(async () => {
    await app?.close();
    await pg?.stop();
  });

  const place = (ref: string, fail = false) =>
    runInTypeOrmTransaction(async () => {
      await dataSource.query('INSERT INTO tt_orders (ref) VALUES ($1)', [ref]);
      const id = await app.get(DelayQueueService).schedule('order.expire', { ref }, { id: `expire:${ref}` });
      if (fail) throw new Error('payment declined');
      return id;
    });

  it('the order and its job commit together; a rolled-back order schedules nothing', async () => {
    await expectOrderAndJobCommitTogether(
      { place, dataSource, runs, ordersTable: 'tt_orders', outboxTable: 'redis_lock_job_outbox' },
      'b-1',
      'b-2',
    );
  });

  it('outside a transaction, dataSource.manager is not a transaction: schedule() writes straight to Redis', async () => {
    const id = await app.get(DelayQueueService).schedule('order.expire', { ref: 'direct' });
    await waitFor(() => runs.some((run) => run.id === id) || undefined, 30_000, 'the direct job');
  });
});
