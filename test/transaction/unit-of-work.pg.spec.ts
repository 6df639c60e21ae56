import { Pool } from 'pg';
import { LockService, runInTransaction } from '../../lib/index.js';
import { createWithLockApp } from '../fixtures/with-lock-app.js';
import { ORDERS_TABLE, raceTwoWorkers } from '../fixtures/tx-race.js';
import { PgOrderLedger, pgWorkers } from '../fixtures/tx-unit-of-work.js';
import { startLocalPostgres, type LocalPostgres } from '../support/postgres.js';
import { uniquePrefix } from '../support/test-app.js';
import { itKeepsLocksUntilTheTransactionEnds } from './support/order-race-scenarios.js';

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

  describe('inside runInTransaction', () => {
    itKeepsLocksUntilTheTransactionEnds(() => pgWorkers(pool, ledger, locks, true), { concurrentOrders: 4 });
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
