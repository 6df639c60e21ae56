import { jest } from '@jest/globals';
import { inPgTransaction, PostgresJobOutbox } from '../../lib/outbox/postgres/index.js';
import { holdsWithin, waitFor } from '../support/timing.js';
import { checkExactlyOnce } from './support/outbox-harness.js';
import { usePgliteOutbox } from './support/pglite-outbox.js';

jest.setTimeout(180_000);

describe('transactional outbox on PGlite', () => {
  const { db, app, runs, inTx } = usePgliteOutbox('pglite-outbox', 'CREATE TABLE orders (ref text PRIMARY KEY)', ['order.expire']);

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

  it('a job committed with a priority is relayed with it', async () => {
    const id = await inTx(async (tx) => {
      await tx.query('INSERT INTO orders (ref) VALUES ($1)', ['prio-1']);
      return app.queue.schedule('order.expire', { ref: 'prio-1' }, { delay: 600_000, priority: 7 });
    });
    await waitFor(async () => (await app.queue.get('order.expire', id)) ?? undefined, 30_000, 'the relayed job');
    expect(await app.queue.get('order.expire', id)).toMatchObject({ state: 'scheduled', priority: 7 });
    expect(await app.queue.cancel('order.expire', id)).toBe(true);
  });

  it('rows left behind are relayed (LISTEN/NOTIFY wakes the relay), each job once', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `left-${i}`);
    await db.transaction(async (tx) => {
      const store = new PostgresJobOutbox({ transaction: inPgTransaction(() => tx), relay: db });
      await store.insert(
        ids.map((id, i) => ({
          rowId: id,
          topic: 'order.expire',
          jobId: id,
          kind: 'delay',
          when: 0,
          replace: false,
          body: `,"m":null,"b":null,"e":null,"p":${i}}`,
        })),
      );
    });
    await waitFor(() => ids.every((id) => runs.some((run) => run.id === id)) || undefined, 60_000, 'the left-behind rows');
    expect(
      checkExactlyOnce(
        runs.filter((run) => run.id.startsWith('left-')),
        ids,
      ),
    ).toEqual({ duplicated: [], missing: [] });
  });

  it('relays rows as the previous release stored them (kind as a one-letter code), and stores the same codes', async () => {
    const body = (p: string) => `,"m":null,"b":null,"e":null,"p":"${p}"}`;
    // Written by hand as release 0.1.0's PostgresJobOutbox wrote them: 'd' a delay (due_at), 'a' an absolute time (at_ms).
    await db.query(
      `INSERT INTO redis_lock_job_outbox (id, topic, job_id, kind, due_at, at_ms, replace, body) VALUES
         ('old-d', 'order.expire', 'old-delay', 'd', clock_timestamp(), NULL, false, $1),
         ('old-a', 'order.expire', 'old-at', 'a', to_timestamp($3 / 1000.0), $3, false, $2)`,
      [body('d'), body('a'), Date.now()],
    );
    await waitFor(
      () => ['old-delay', 'old-at'].every((id) => runs.some((run) => run.id === id)) || undefined,
      60_000,
      'the rows of the previous release',
    );
    expect(
      checkExactlyOnce(
        runs.filter((run) => run.id.startsWith('old-')),
        ['old-delay', 'old-at'],
      ),
    ).toEqual({ duplicated: [], missing: [] });
    expect(runs.find((run) => run.id === 'old-at')).toMatchObject({ payload: 'a' });

    // Rows this release inserts keep the codes, so an instance of the previous release relays them too.
    const kinds = await db.transaction(async (tx) => {
      await new PostgresJobOutbox({ transaction: inPgTransaction(() => tx), relay: db }).insert([
        { rowId: 'new-delay', topic: 'order.expire', jobId: 'new-delay', kind: 'delay', when: 60_000, replace: false, body: body('n') },
        { rowId: 'new-at', topic: 'order.expire', jobId: 'new-at', kind: 'at', when: Date.now() + 60_000, replace: false, body: body('n') },
      ]);
      return (await tx.query<{ id: string; kind: string }>("SELECT id, kind FROM redis_lock_job_outbox WHERE id LIKE 'new-%' ORDER BY id"))
        .rows;
    });
    expect(kinds).toEqual([
      { id: 'new-at', kind: 'a' },
      { id: 'new-delay', kind: 'd' },
    ]);
  });
});
