import { jest } from '@jest/globals';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { AsyncLocalStorage } from 'node:async_hooks';
import { runInTransaction } from '../../lib/index.js';
import { inPgliteTransaction, PostgresJobOutbox } from '../../lib/outbox/postgres/index.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { holdsWithin, waitFor } from '../support/timing.js';
import { checkExactlyOnce, startOutboxApp, type OutboxApp, type RecordedRun } from './support/outbox-harness.js';

jest.setTimeout(180_000);

describe('transactional outbox on PGlite', () => {
  let db: PGlite;
  let app: OutboxApp;
  const current = new AsyncLocalStorage<Transaction>();
  const runs: RecordedRun[] = [];
  const inTx = <T>(work: (tx: Transaction) => Promise<T>) =>
    runInTransaction(() => db.transaction((tx) => current.run(tx, () => work(tx))));

  beforeAll(async () => {
    db = new PGlite();
    await db.exec('CREATE TABLE orders (ref text PRIMARY KEY)');
    app = await startOutboxApp({
      redis: testRedisUrl(),
      keyPrefix: uniquePrefix('pglite-outbox'),
      outbox: new PostgresJobOutbox({ transaction: inPgliteTransaction(() => current.getStore()), relay: db, applyMigrationAtStart: true }),
      topics: ['order.expire'],
      runs,
      outboxRelay: { minAge: 200 },
    });
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
  });

  it('commit runs the job once, rollback never', async () => {
    const id = await inTx(async (tx) => {
      await tx.query('INSERT INTO orders (ref) VALUES ($1)', ['p-1']);
      return app.queue.schedule('order.expire', { ref: 'p-1' }, { delay: 100 });
    });
    await expect(
      inTx(async (tx) => {
        await tx.query('INSERT INTO orders (ref) VALUES ($1)', ['p-2']);
        await app.queue.schedule('order.expire', { ref: 'p-2' });
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    await waitFor(() => runs.length === 1 || undefined, 60_000, 'the committed job');
    expect(runs[0]).toMatchObject({ id, payload: { ref: 'p-1' } });
    // The relay DELETEs a row after Redis answered its write: the job may run first. Wait for the DELETE.
    const outboxRows = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM redis_lock_job_outbox')).rows[0].n;
    await waitFor(async () => (await outboxRows()) === 0, 30_000, 'the relay to delete the relayed outbox row', { every: 50 });
    // The rolled-back job left no row to relay: no second run, ever.
    expect(await holdsWithin(() => runs.length > 1, 1_500)).toBe(false);
  });

  it('rows left behind are relayed (LISTEN/NOTIFY wakes the relay), each job once', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `left-${i}`);
    await db.transaction(async (tx) => {
      const store = new PostgresJobOutbox({ transaction: inPgliteTransaction(() => tx), relay: db });
      await store.insert(ids.map((id, i) => ({ rowId: id, topic: 'order.expire', jobId: id, kind: 'd', when: 0, replace: false, body: `,"m":null,"b":null,"e":null,"p":${i}}` })));
    });
    await waitFor(() => ids.every((id) => runs.some((run) => run.id === id)) || undefined, 60_000, 'the left-behind rows');
    expect(checkExactlyOnce(runs.filter((run) => run.id.startsWith('left-')), ids)).toEqual({ duplicated: [], missing: [] });
  });
});
