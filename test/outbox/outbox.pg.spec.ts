import { AsyncLocalStorage } from 'node:async_hooks';
import { jest } from '@jest/globals';
import type { PoolClient } from 'pg';
import type { DataSource } from 'typeorm';
import { InvalidJobError, InvalidOptionsError, OutboxTransactionMissingError, runInTransaction } from '../../lib/index.js';
import { inPgTransaction, inTypeOrmTransaction, jobOutboxMigration, PostgresJobOutbox } from '../../lib/outbox/postgres/index.js';
import { createLockApp, testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { holdsWithin, sleep, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { typeOrmDataSource } from '../support/postgres-data-source.js';
import { checkExactlyOnce, startOutboxApp, type OutboxApp, type RecordedRun } from './support/outbox-harness.js';
import { startOutboxPostgres, type OutboxPostgres } from './support/outbox-postgres.js';

jest.setTimeout(120_000);
afterEach(() => jest.restoreAllMocks());

const TABLE = 'outbox_spec.job_outbox';

failOnUnhandledRejections();

describe('transactional outbox on PostgreSQL (pg pool, TypeORM)', () => {
  let pg: OutboxPostgres;
  let keyPrefix: string;
  let instance: OutboxApp;

  const topic = (label: string) => `${label}.${Math.random().toString(36).slice(2, 8)}`;
  const outboxRows = async () =>
    (await pg.pool.query(`SELECT id, topic, job_id, parked_at, last_error FROM ${TABLE} ORDER BY created_at`)).rows;
  const rowsOf = async (t: string) => (await outboxRows()).filter((row) => row.topic === t);

  beforeAll(async () => {
    // The table is created by the first app's applyMigrationAtStart.
    pg = await startOutboxPostgres(TABLE, { migrate: false });
    keyPrefix = uniquePrefix('outbox');
    instance = await startOutboxApp({ redis: testRedisUrl(), keyPrefix, outbox: pg.store({ applyMigrationAtStart: true }), topics: [] });
  });
  afterAll(async () => {
    await instance?.close();
    await pg?.stop();
  });

  /** Consumes topic `t` on `app`, recording each run into `runs`; returns `runs`. */
  const recordRuns = (t: string, app = instance, runs: RecordedRun[] = []): RecordedRun[] => {
    app.queue.consume(t, (payload, job) => void runs.push({ id: job.id, payload, at: Date.now() }), { concurrency: 4 });
    return runs;
  };

  it('the migration applies cleanly twice, and the shipped SQL is the default table', async () => {
    await pg.pool.query(jobOutboxMigration(TABLE));
    await pg.pool.query(jobOutboxMigration(TABLE));
    await pg.pool.query(jobOutboxMigration());
    await pg.pool.query(jobOutboxMigration());
    const { rows } = await pg.pool.query(`SELECT to_regclass('redis_lock_job_outbox') AS t, to_regclass('${TABLE}') AS s`);
    expect(rows[0]).toEqual({ t: 'redis_lock_job_outbox', s: TABLE });
  });

  it('a job scheduled in a committed transaction runs once, and its row is gone', async () => {
    const t = topic('commit');
    const runs = recordRuns(t);
    const id = await pg.tx.run(async (client) => {
      await client.query('SELECT 1');
      const jobId = await instance.queue.schedule(t, { order: 1 });
      // Inside the transaction the row exists for this transaction only; nothing is in Redis yet.
      expect((await client.query(`SELECT count(*)::int AS n FROM ${TABLE} WHERE job_id = $1`, [jobId])).rows[0].n).toBe(1);
      expect(await instance.queue.get(t, jobId)).toBeNull();
      return jobId;
    });
    await waitFor(() => runs.length === 1 || undefined, 30_000, 'the committed job to run');
    expect(runs[0]).toMatchObject({ id, payload: { order: 1 } });
    await waitFor(async () => ((await rowsOf(t)).length === 0 ? true : undefined), 30_000, 'the row to be deleted');
    expect(await holdsWithin(() => runs.length === 1, 1_000)).toBe(true);
  });

  it('scheduleMany in a committed transaction: every job once', async () => {
    const t = topic('many');
    const runs = recordRuns(t);
    const ids = await pg.tx.run(() =>
      instance.queue.scheduleMany(
        t,
        Array.from({ length: 50 }, (_, i) => ({ payload: i })),
      ),
    );
    await waitFor(() => runs.length >= 50 || undefined, 30_000, 'the 50 jobs to run');
    expect(checkExactlyOnce(runs, ids)).toEqual({ duplicated: [], missing: [] });
  });

  it('a job scheduled in a rolled-back transaction never runs and leaves no row', async () => {
    const t = topic('rollback');
    const runs = recordRuns(t);
    let id = '';
    await expect(
      pg.tx.run(async () => {
        id = await instance.queue.schedule(t, { order: 2 });
        throw new Error('payment declined');
      }),
    ).rejects.toThrow('payment declined');
    expect(await rowsOf(t)).toEqual([]);
    expect(await holdsWithin(() => runs.length === 0, 2_000)).toBe(true);
    expect(await instance.queue.get(t, id)).toBeNull();
  });

  it('a job scheduled in a savepoint that was rolled back never runs, though the transaction commits', async () => {
    const t = topic('savepoint');
    const runs = recordRuns(t);
    const kept = await pg.tx.run(async (client) => {
      await client.query('SAVEPOINT before_job');
      await instance.queue.schedule(t, 'rolled back with the savepoint', { id: 'dropped' });
      await client.query('ROLLBACK TO SAVEPOINT before_job');
      return instance.queue.schedule(t, 'kept', { id: 'kept' });
    });
    await waitFor(() => runs.length === 1 || undefined, 30_000, 'the kept job');
    expect(await holdsWithin(() => runs.length === 1, 2_000)).toBe(true);
    expect(runs.map((run) => run.id)).toEqual([kept]);
    expect(await instance.queue.get(t, 'dropped')).toBeNull();
  });

  it('keeps the due time: a delayed job committed later runs at its time from the schedule() call', async () => {
    const t = topic('delay');
    const runs = recordRuns(t);
    const start = Date.now();
    await pg.tx.run(async () => {
      await instance.queue.schedule(t, 'later', { delay: 2_000 });
      await sleep(1_000); // a long transaction: the delay counts from the call, not from COMMIT
    });
    await waitFor(() => runs.length === 1 || undefined, 30_000, 'the delayed job');
    expect(runs[0].at - start).toBeGreaterThanOrEqual(1_900);
  });

  it('claims rows left behind oldest first', async () => {
    // The port's order, which the relay applies a batch's rows in.
    const t = topic('claim-order');
    const ids = Array.from({ length: 40 }, (_, i) => `${t}:${String(i).padStart(2, '0')}`);
    const client = await pg.pool.connect();
    try {
      await client.query('BEGIN');
      const store = new PostgresJobOutbox({ transaction: inPgTransaction(() => client), relay: pg.pool, table: TABLE });
      // One statement per row, as repeat() and removeRepeat() insert theirs.
      for (const [i, rowId] of ids.entries()) {
        await store.insert([
          { rowId, topic: t, jobId: `s${i}`, kind: i % 2 === 0 ? 'repeat' : 'removeRepeat', when: 0, replace: false, body: '' },
        ]);
      }
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const claimed = await pg.store().claimBatch(ids.length, { minAgeMs: 0, claimMs: 60_000 });
    await pg.pool.query(`DELETE FROM ${TABLE} WHERE topic = $1`, [t]);
    expect(claimed.map((row) => row.rowId)).toEqual(ids);
  });

  it('hands out a schedule change only once the older changes of that schedule are done, so two relays cannot reorder them', async () => {
    const t = topic('schedule-order');
    const insert = async (rowId: string, jobId: string, kind: 'repeat' | 'removeRepeat') => {
      const client = await pg.pool.connect();
      try {
        await client.query('BEGIN');
        await new PostgresJobOutbox({ transaction: inPgTransaction(() => client), relay: pg.pool, table: TABLE }).insert([
          { rowId, topic: t, jobId, kind, when: 0, replace: false, body: '' },
        ]);
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    };
    // Two committed transactions: repeat() of 'gone', then its removeRepeat(); and another schedule's change.
    await insert(`${t}:1`, 'gone', 'repeat');
    await insert(`${t}:2`, 'gone', 'removeRepeat');
    await insert(`${t}:3`, 'other', 'repeat');
    const store = pg.store();
    const claim = { minAgeMs: 0, claimMs: 60_000 };
    try {
      // Relay 1 takes the oldest row; relay 2, at the same time, must not get the removal of that schedule.
      expect((await store.claimBatch(1, claim)).map((row) => row.rowId)).toEqual([`${t}:1`]);
      expect((await store.claimBatch(10, claim)).map((row) => row.rowId)).toEqual([`${t}:3`]);
      // Nor may a process relaying its own commit take it.
      expect(await store.claimRows!([`${t}:2`], { claimMs: 60_000 })).toEqual([]);
      // Once relay 1 is done with the older row, the removal is handed out.
      await store.delete([`${t}:1`]);
      expect((await store.claimBatch(10, claim)).map((row) => row.rowId)).toEqual([`${t}:2`]);
    } finally {
      await pg.pool.query(`DELETE FROM ${TABLE} WHERE topic = $1`, [t]);
    }
  });

  it('rows left behind are relayed by two instances at once: each job runs exactly once, overdue ones at once', async () => {
    const t = topic('left-behind');
    const runs: RecordedRun[] = [];
    // Rows committed by a process that died before relaying them: inserted without the delay queue.
    const ids = Array.from({ length: 200 }, (_, i) => `job-${i}`);
    const client = await pg.pool.connect();
    try {
      await client.query('BEGIN');
      const store = new PostgresJobOutbox({ transaction: inPgTransaction(() => client), relay: pg.pool, table: TABLE });
      await store.insert(
        ids.map((id, i) => ({
          rowId: `${t}:${i}`,
          topic: t,
          jobId: id,
          kind: 'delay',
          when: 0,
          replace: false,
          body: `,"m":null,"b":null,"e":null,"p":${i}}`,
        })),
      );
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const [a, b] = await Promise.all(
      [0, 1].map(() =>
        startOutboxApp({
          redis: testRedisUrl(),
          keyPrefix,
          outbox: pg.store(),
          runs,
          outboxRelay: { minAge: 0, batchSize: 7, pollInterval: 50 },
        }),
      ),
    );
    try {
      recordRuns(t, a, runs);
      await waitFor(() => runs.length >= ids.length || undefined, 60_000, 'every left-behind job to run');
      expect(await holdsWithin(() => runs.length === ids.length, 1_500)).toBe(true);
      expect(checkExactlyOnce(runs, ids)).toEqual({ duplicated: [], missing: [] });
      // A row is deleted after Redis has answered its write, so its job may run first.
      await waitFor(async () => (await rowsOf(t)).length === 0 || undefined, 10_000, 'the relayed rows to be deleted');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a row whose DELETE failed after its job was written and ran is relayed again without running twice', async () => {
    muteNestLogger('error');
    const t = topic('relay-twice');
    const runs: RecordedRun[] = [];
    // A store whose first DELETE fails, after the job is in Redis (a crash or a lost connection there).
    const store = pg.store();
    let deletes = 0;
    const flaky = Object.assign(Object.create(store) as PostgresJobOutbox, {
      delete: async (ids: readonly string[]) => {
        if (deletes++ === 0) throw new Error('connection lost before DELETE');
        return store.delete(ids);
      },
    });
    const app = await startOutboxApp({ redis: testRedisUrl(), keyPrefix, outbox: flaky, outboxRelay: { minAge: 0, pollInterval: 50 } });
    try {
      recordRuns(t, app, runs);
      const client = await pg.pool.connect();
      try {
        await client.query('BEGIN');
        await new PostgresJobOutbox({ transaction: inPgTransaction(() => client), relay: pg.pool, table: TABLE }).insert([
          { rowId: `${t}:0`, topic: t, jobId: 'once', kind: 'delay', when: 0, replace: false, body: ',"m":null,"b":null,"e":null,"p":1}' },
        ]);
        await client.query('COMMIT');
      } finally {
        client.release();
      }
      await waitFor(() => runs.length === 1 || undefined, 30_000, 'the first relay');
      await waitFor(async () => ((await rowsOf(t)).length === 0 ? true : undefined), 30_000, 'the row to be relayed again and deleted');
      expect(deletes).toBeGreaterThanOrEqual(2);
      expect(await holdsWithin(() => runs.length === 1, 1_500)).toBe(true);
    } finally {
      await app.close();
    }
  });

  it('a row that cannot be decoded is parked with its reason, and the other rows are relayed', async () => {
    muteNestLogger('error');
    const t = topic('bad-row');
    const runs = recordRuns(t);
    const client = await pg.pool.connect();
    try {
      await client.query('BEGIN');
      await new PostgresJobOutbox({ transaction: inPgTransaction(() => client), relay: pg.pool, table: TABLE }).insert([
        { rowId: `${t}:bad`, topic: t, jobId: 'bad', kind: 'delay', when: 0, replace: false, body: 'not a job body' },
        {
          rowId: `${t}:good`,
          topic: t,
          jobId: 'good',
          kind: 'delay',
          when: 0,
          replace: false,
          body: ',"m":null,"b":null,"e":null,"p":"ok"}',
        },
      ]);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    await waitFor(() => runs.length === 1 || undefined, 30_000, 'the good row');
    const parked = await waitFor(
      async () => {
        const rows = await rowsOf(t);
        return rows.length === 1 && rows[0].parked_at ? rows[0] : undefined;
      },
      30_000,
      'the bad row to be parked',
    );
    expect(parked).toMatchObject({ job_id: 'bad', last_error: expect.stringContaining('cannot be decoded') });
    expect(instance.seen.filter((e) => e.name === 'outbox.row.parked').map((e) => e.event)).toContainEqual(
      expect.objectContaining({ rowId: `${t}:bad`, jobId: 'bad' }),
    );
    expect(runs.map((run) => run.id)).toEqual(['good']);
  });

  it('refuses a schedule() the executor cannot put in a transaction: OutboxTransactionMissingError, nothing written', async () => {
    const t = topic('no-tx');
    const noTx = await startOutboxApp({
      redis: testRedisUrl(),
      keyPrefix,
      outbox: new PostgresJobOutbox({ transaction: inPgTransaction(() => undefined), relay: pg.pool, table: TABLE }),
    });
    try {
      await expect(runInTransaction(() => noTx.queue.schedule(t, 1, { id: 'lost?' }))).rejects.toThrow(OutboxTransactionMissingError);
      expect(await rowsOf(t)).toEqual([]);
      expect(await noTx.queue.get(t, 'lost?')).toBeNull();
      // Outside a transaction the outbox is not involved: schedule() writes to Redis directly.
      await noTx.queue.schedule(t, 1, { id: 'direct' });
      expect(await noTx.queue.get(t, 'direct')).not.toBeNull();
    } finally {
      await noTx.close();
    }
  });

  it(
    'refuses a schedule() or repeat() inside a transaction the executor sees but the transaction port ' +
      'does not (BEGIN…COMMIT without runInTransaction): nothing written',
    async () => {
      const t = topic('unseen-tx');
      const current = new AsyncLocalStorage<PoolClient>();
      const app = await startOutboxApp({
        redis: testRedisUrl(),
        keyPrefix,
        outbox: new PostgresJobOutbox({ transaction: inPgTransaction(() => current.getStore()), relay: pg.pool, table: TABLE }),
      });
      const client = await pg.pool.connect();
      try {
        await client.query('BEGIN');
        const scheduled = current.run(client, () => app.queue.schedule(t, 1, { id: 'before-commit?' }));
        await expect(scheduled).rejects.toThrow(OutboxTransactionMissingError);
        await expect(scheduled).rejects.toMatchObject({
          missingFrom: 'transaction port',
          message: expect.stringContaining('runInTransaction'),
        });
        await expect(current.run(client, () => app.queue.repeat(t, { every: 60_000 }, { id: 'r' }))).rejects.toThrow(
          OutboxTransactionMissingError,
        );
        await client.query('ROLLBACK');
        expect(await app.queue.get(t, 'before-commit?')).toBeNull();
        expect(await app.queue.listRepeats(t)).toEqual([]);
        expect(await rowsOf(t)).toEqual([]);
        // With runInTransaction around the same code, the job goes through the outbox and runs after COMMIT only.
        await runInTransaction(() =>
          current.run(client, async () => {
            await client.query('BEGIN');
            await app.queue.schedule(t, 2, { id: 'after-commit' });
            expect(await app.queue.get(t, 'after-commit')).toBeNull();
            await client.query('COMMIT');
          }),
        );
        await waitFor(async () => (await app.queue.get(t, 'after-commit')) ?? undefined, 30_000, 'the committed job in Redis');
        // A continuation that runs after COMMIT with the client still in the store (fire-and-forget
        // work started in the transaction): the client is idle, no transaction is open, Redis at once.
        await current.run(client, () => app.queue.schedule(t, 3, { id: 'later-in-store' }));
        expect(await app.queue.get(t, 'later-in-store')).not.toBeNull();
      } finally {
        client.release();
        await app.close();
      }
    },
  );

  it('refuses a payload JSON cannot carry before inserting anything', async () => {
    const t = topic('bad-payload');
    await expect(pg.tx.run(() => instance.queue.schedule(t, { n: 10n }))).rejects.toThrow(InvalidJobError);
    expect(await rowsOf(t)).toEqual([]);
  });

  it('refuses a table name that is not plain identifiers, and a module outbox that is not a store', async () => {
    for (const table of ['x; DROP TABLE orders', '"Quoted"', 'a.b.c', 'Upper', '', 42]) {
      expect(() => new PostgresJobOutbox({ transaction: inPgTransaction(pg.tx.current), relay: pg.pool, table: table as string })).toThrow(
        InvalidOptionsError,
      );
    }
    expect(() => new PostgresJobOutbox({ transaction: undefined as never, relay: pg.pool })).toThrow(/PostgresJobOutbox.transaction/);
    expect(() => new PostgresJobOutbox({ transaction: inPgTransaction(pg.tx.current), relay: {} })).toThrow(/PostgresJobOutbox.relay/);
    await expect(createLockApp({ delayQueue: { outbox: {} as never } })).rejects.toThrow(/delayQueue.outbox/);
  });

  describe('TypeORM EntityManager executor', () => {
    let dataSource: DataSource;
    let app: OutboxApp;
    let manager: import('typeorm').EntityManager | undefined;

    beforeAll(async () => {
      dataSource = typeOrmDataSource(pg.server);
      await dataSource.initialize();
      app = await startOutboxApp({
        redis: testRedisUrl(),
        keyPrefix,
        outbox: new PostgresJobOutbox({ transaction: inTypeOrmTransaction(() => manager), relay: dataSource, table: TABLE }),
      });
    });
    afterAll(async () => {
      await app?.close();
      await dataSource?.destroy();
    });

    const inTypeOrm = <T>(work: () => Promise<T>) =>
      runInTransaction(() =>
        dataSource.transaction(async (m) => {
          manager = m;
          try {
            return await work();
          } finally {
            manager = undefined;
          }
        }),
      );

    it('commit runs the job once, rollback never; the relay runs on the DataSource', async () => {
      const t = topic('typeorm');
      const runs = recordRuns(t, app);
      const committed = await inTypeOrm(() => app.queue.schedule(t, 'committed'));
      await expect(
        inTypeOrm(async () => {
          await app.queue.schedule(t, 'rolled back');
          throw new Error('rollback');
        }),
      ).rejects.toThrow('rollback');
      await waitFor(() => runs.length === 1 || undefined, 30_000, 'the committed job');
      expect(await holdsWithin(() => runs.length === 1, 1_500)).toBe(true);
      expect(runs[0]).toMatchObject({ id: committed, payload: 'committed' });
      // A row is deleted after Redis has answered its write, so its job may run first.
      await waitFor(async () => (await rowsOf(t)).length === 0 || undefined, 10_000, 'the relayed rows to be deleted');
    });
  });
});
