import { jest } from '@jest/globals';
import type { TestingModule } from '@nestjs/testing';
import type { DataSource } from 'typeorm';
import { DelayQueueService } from '../../lib/index.js';
import { startPostgresWithDataSource, type PostgresWithDataSource } from '../support/postgres-data-source.js';
import type { RecordedRun } from './support/outbox-harness.js';
import { expectOrderAndJobCommitTogether } from './support/orders-commit-with-jobs.js';

// @nestjs-cls/transactional is CommonJS and require()s Nest 12's ES modules: loaded after the
// static imports ran (see test/transaction/nestjs-cls.pg.spec.ts).
const { ClsOutboxOrders, createClsOutboxApp } = await import('../fixtures/outbox-cls-app.js');

jest.setTimeout(120_000);

const TABLE = 'cls_outbox';

describe('transactional outbox with @nestjs-cls/transactional (TypeORM adapter, PostgreSQL)', () => {
  let pg: PostgresWithDataSource | undefined;
  let dataSource: DataSource;
  let app: TestingModule;
  const runs: RecordedRun[] = [];

  beforeAll(async () => {
    pg = await startPostgresWithDataSource((ds) => ds.query('CREATE TABLE cls_orders (ref text PRIMARY KEY)'));
    dataSource = pg.dataSource;
    app = await createClsOutboxApp(dataSource, TABLE);
    // The relay DELETEs a row after Redis answered its write, so a job may run before its row is gone
    // (a loaded machine makes the DELETE late). A slow DELETE makes that order certain here.
    await dataSource.query(
      `CREATE FUNCTION slow_delete() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN OLD; END $$ LANGUAGE plpgsql`,
    );
    await dataSource.query(`CREATE TRIGGER slow_delete BEFORE DELETE ON ${TABLE} FOR EACH ROW EXECUTE FUNCTION slow_delete()`);
    app.get(DelayQueueService).consume('order.expire', (payload, job) => void runs.push({ id: job.id, payload, at: Date.now() }));
  });
  afterAll(async () => {
    await app?.close();
    await pg?.stop();
  });

  it('the order and its job commit together; a rolled-back order schedules nothing', async () => {
    const orders = app.get(ClsOutboxOrders);
    await expectOrderAndJobCommitTogether(
      { place: (ref, fail) => orders.place(ref, fail), dataSource, runs, ordersTable: 'cls_orders', outboxTable: TABLE },
      'a-1',
      'a-2',
    );
  });
});
