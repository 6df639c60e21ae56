import { Pool } from 'pg';
import { LockService, runInTransaction } from '../../lib/index.js';
import { createWithLockApp } from '../fixtures/with-lock-app.js';
import { ORDERS_TABLE, raceTwoWorkers, rollbackThenRetry } from '../fixtures/tx-race.js';
import { PgOrderLedger, pgWorkers } from '../fixtures/tx-unit-of-work.js';
import { startLocalPostgres, type LocalPostgres } from '../support/postgres.js';
import { uniquePrefix } from '../support/test-app.js';

describe('built-in unit of work (runInTransaction) with PostgreSQL', () => {
  let postgres: LocalPostgres;
  let pool: Pool;
  let close: () => Promise<void>;
  let ledger: PgOrderLedger;
  let locks: LockService;

  beforeAll(async () => {
    postgres = await startLocalPostgres();
    pool = new Pool({ host: postgres.host, port: postgres.port, user: postgres.user, database: postgres.database, max: 6 });
    await pool.query(ORDERS_TABLE);
    const created = await createWithLockApp([PgOrderLedger]);
    close = () => created.app.close();
    ledger = created.app.get(PgOrderLedger);
    locks = created.app.get(LockService);
  });
  afterAll(async () => {
    await close?.();
    await pool?.end();
    await postgres?.stop();
  });

  it('without a unit of work, the lock is released before COMMIT and a second worker inserts a duplicate', async () => {
    const outcome = await raceTwoWorkers(pgWorkers(pool, ledger, locks, false), uniquePrefix('order'));
    expect(outcome).toEqual({ inserted: [true, true], rows: 2, heldUntilCommit: false });
  });

  it('inside runInTransaction, the lock is released after COMMIT and the second worker sees the row', async () => {
    const outcome = await raceTwoWorkers(pgWorkers(pool, ledger, locks, true), uniquePrefix('order'));
    expect(outcome).toEqual({ inserted: [true, false], rows: 1, heldUntilCommit: true });
  });

  it('keeps that ordering over many concurrent workers', async () => {
    const workers = pgWorkers(pool, ledger, locks, true);
    const refs = Array.from({ length: 4 }, () => uniquePrefix('order'));
    const results = await Promise.all(refs.flatMap((ref) => [1, 2, 3].map(() => workers.placeOrder(ref))));
    expect(results.filter(Boolean)).toHaveLength(refs.length);
    for (const ref of refs) expect(await workers.countOrders(ref)).toBe(1);
  });

  it('releases the lock after ROLLBACK, and the next worker inserts', async () => {
    const outcome = await rollbackThenRetry(pgWorkers(pool, ledger, locks, true), uniquePrefix('order'));
    expect(outcome).toEqual({
      heldUntilRollback: true,
      lockedAfterRollback: false,
      error: 'declined',
      retried: true,
      rows: 1,
    });
  });

  it('releases at once outside a unit of work', async () => {
    const ref = uniquePrefix('order');
    const client = await pool.connect();
    try {
      await ledger.insertOnce(ref, client);
      expect(await locks.isLocked(`order:${ref}`)).toBe(false);
      // ...and a release inside one waits for its end.
      await runInTransaction(async () => {
        const lock = await locks.acquire(`order:${ref}`);
        await lock.release();
        expect(await locks.isLocked(`order:${ref}`)).toBe(true);
      });
      expect(await locks.isLocked(`order:${ref}`)).toBe(false);
    } finally {
      client.release();
    }
  });
});
