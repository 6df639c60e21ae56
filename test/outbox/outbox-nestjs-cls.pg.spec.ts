import { jest } from '@jest/globals';
import type { TestingModule } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { DelayQueueService } from '../../lib/index.js';
import { startLocalPostgres, type LocalPostgres } from '../support/postgres.js';
import { holdsWithin, waitFor } from '../support/timing.js';
import type { RecordedRun } from './support/outbox-harness.js';

// @nestjs-cls/transactional is CommonJS and require()s Nest 12's ES modules: loaded after the
// static imports ran (see test/transaction/nestjs-cls.pg.spec.ts).
const { ClsOutboxOrders, createClsOutboxApp } = await import('../fixtures/outbox-cls-app.js');

jest.setTimeout(120_000);

const TABLE = 'cls_outbox';

describe('transactional outbox with @nestjs-cls/transactional (TypeORM adapter, PostgreSQL)', () => {
  let postgres: LocalPostgres;
  let dataSource: DataSource;
  let app: TestingModule;
  const runs: RecordedRun[] = [];

  beforeAll(async () => {
    postgres = await startLocalPostgres();
    dataSource = new DataSource({ type: 'postgres', host: postgres.host, port: postgres.port, username: postgres.user, database: postgres.database, poolSize: 4 });
    await dataSource.initialize();
    await dataSource.query('CREATE TABLE cls_orders (ref text PRIMARY KEY)');
    app = await createClsOutboxApp(dataSource, TABLE);
    // The relay DELETEs a row after Redis answered its write, so a job may run before its row is gone
    // (a loaded machine makes the DELETE late). A slow DELETE makes that order certain here.
    await dataSource.query(`CREATE FUNCTION slow_delete() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(0.3); RETURN OLD; END $$ LANGUAGE plpgsql`);
    await dataSource.query(`CREATE TRIGGER slow_delete BEFORE DELETE ON ${TABLE} FOR EACH ROW EXECUTE FUNCTION slow_delete()`);
    app.get(DelayQueueService).consume('order.expire', (payload, job) => void runs.push({ id: job.id, payload, at: Date.now() }));
  });
  afterAll(async () => {
    await app?.close();
    await dataSource?.destroy();
    await postgres?.stop();
  });

  it('the order and its job commit together; a rolled-back order schedules nothing', async () => {
    const orders = app.get(ClsOutboxOrders);
    const id = await orders.place('a-1');
    await expect(orders.place('a-2', true)).rejects.toThrow('payment declined');
    await waitFor(() => runs.length === 1 || undefined, 30_000, 'the committed order\'s job');
    expect(runs[0]).toMatchObject({ id, payload: { ref: 'a-1' } });
    expect(await dataSource.query(`SELECT ref FROM cls_orders`)).toEqual([{ ref: 'a-1' }]);
    // The relayed row is deleted after its job reached Redis: wait for that DELETE, do not race it.
    const outboxRows = async () => (await dataSource.query(`SELECT count(*)::int AS n FROM ${TABLE}`))[0].n as number;
    await waitFor(async () => (await outboxRows()) === 0, 30_000, 'the relay to delete the relayed outbox row', { every: 50 });
    // The rolled-back order left no row to relay: no second job, ever.
    expect(await holdsWithin(() => runs.length > 1, 1_500)).toBe(false);
    expect(await outboxRows()).toBe(0);
  });
});
