import type { TestingModule } from '@nestjs/testing';
import type { DataSource } from 'typeorm';
import { StorageDriver, addTransactionalDataSource, initializeTransactionalContext } from 'typeorm-transactional';
import { LockService } from '../../lib/index.js';
import { TypeOrmTransactionalSynchronizer } from '../../lib/transaction-adapters/typeorm-transactional.js';
import { ordersDataSource } from '../fixtures/tx-datasource.js';
import { countOrders, raceTwoWorkers, workflowWorkers } from '../fixtures/tx-race.js';
import { waitFor } from '../support/timing.js';
import { TypeOrmOrderWorkflow, createTypeOrmTransactionalApp } from '../fixtures/tx-typeorm-transactional.js';
import { connectPostgres, startLocalPostgres, type LocalPostgres } from '../support/postgres.js';
import { uniquePrefix } from '../support/test-app.js';
import { itReleasesLocksWithTheTransactionalWorkflow } from './support/order-race-scenarios.js';

describe('typeorm-transactional (PostgreSQL): a lock released inside @Transactional()', () => {
  let postgres: LocalPostgres;
  let dataSource: DataSource;

  beforeAll(async () => {
    initializeTransactionalContext({ storageDriver: StorageDriver.ASYNC_LOCAL_STORAGE });
    postgres = await startLocalPostgres();
    dataSource = addTransactionalDataSource(await ordersDataSource(postgres));
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await postgres?.stop();
  });

  describe('without a synchronizer (release before COMMIT)', () => {
    let app: TestingModule;
    beforeAll(async () => {
      app = await createTypeOrmTransactionalApp(dataSource, undefined);
    });
    afterAll(() => app?.close());

    it("lets a second worker miss the first one's uncommitted row and insert a duplicate", async () => {
      const workers = workflowWorkers(app.get(TypeOrmOrderWorkflow), app.get(LockService), dataSource);
      const outcome = await raceTwoWorkers(workers, uniquePrefix('order'));
      expect(outcome).toEqual({ inserted: [true, true], rows: 2, heldUntilCommit: false });
    });
  });

  describe('with TypeOrmTransactionalSynchronizer', () => {
    let app: TestingModule;
    let workflow: TypeOrmOrderWorkflow;
    let locks: LockService;

    beforeAll(async () => {
      app = await createTypeOrmTransactionalApp(dataSource, new TypeOrmTransactionalSynchronizer());
      workflow = app.get(TypeOrmOrderWorkflow);
      locks = app.get(LockService);
    });
    afterAll(() => app?.close());

    itReleasesLocksWithTheTransactionalWorkflow(() => ({ workflow, locks, workers: workflowWorkers(workflow, locks, dataSource) }), {
      savepoint: 'manager.transaction()',
      notSupported: 'Propagation.NOT_SUPPORTED',
    });

    it('releases a lock taken with Propagation.NESTED when that transaction (its own, in typeorm-transactional) commits', async () => {
      const ref = uniquePrefix('order');
      let heldAfterNested = true;
      let rowsAfterNested = 0;
      await workflow.placeOrderNested(ref, {
        beforeCommit: async () => {
          heldAfterNested = await locks.isLocked(`order:${ref}`);
          rowsAfterNested = await countOrders(dataSource, ref);
        },
      });
      // Released only once the row it guarded was committed and visible to everyone.
      expect({ heldAfterNested, rowsAfterNested }).toEqual({ heldAfterNested: false, rowsAfterNested: 1 });
    });

    it('releases the lock when the connection dies mid-transaction and ROLLBACK cannot run', async () => {
      const ref = uniquePrefix('order');
      const admin = await connectPostgres(postgres);
      try {
        const failed = workflow.placeOrderAndLoseConnection(ref, async (pid) => {
          const sleeping = "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query LIKE '%pg_sleep%'";
          await waitFor(
            async () => ((await admin.query(sleeping, [pid])).rowCount ?? 0) > 0,
            10_000,
            'the transaction to be inside pg_sleep',
          );
          await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        });
        await expect(failed).rejects.toThrow();
        // typeorm-transactional reports the end on the next turn of the event loop.
        await waitFor(async () => !(await locks.isLocked(`order:${ref}`)), 10_000, 'the lock to be released');
      } finally {
        await admin.end();
      }
    });
  });
});
