import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import type { DataSource } from 'typeorm';
import { LockService } from '../../lib/index.js';
import { ordersDataSource } from '../fixtures/tx-datasource.js';
import { placeTwiceInOneTransaction, raceTwoWorkers, rollbackThenRetry } from '../fixtures/tx-race.js';
import { startLocalPostgres, type LocalPostgres } from '../support/postgres.js';
import { uniquePrefix } from '../support/test-app.js';

// @nestjs-cls/transactional is CommonJS and require()s Nest 12's ES modules. Jest links a CommonJS
// dependency of an ES module before that graph's ES modules have run, which Node 24 reports as a
// require(esm) cycle; loaded here, after the static imports above ran, @nestjs/common is complete.
const { ClsTransactionSynchronizer } = await import('../../lib/transaction-adapters/nestjs-cls.js');
const { ClsOrderWorkflow, clsWorkers, createClsApp } = await import('../fixtures/tx-nestjs-cls.js');

describe('@nestjs-cls/transactional (TypeORM adapter, PostgreSQL): a lock released inside @Transactional()', () => {
  let postgres: LocalPostgres;
  let dataSource: DataSource;

  beforeAll(async () => {
    postgres = await startLocalPostgres();
    dataSource = await ordersDataSource(postgres);
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await postgres?.stop();
  });

  // @nestjs-cls/transactional keeps one TransactionHost per connection name in a static map, so the
  // two applications run one after the other.
  describe('when the adapter is not wrapped (release before COMMIT)', () => {
    let app: TestingModule;
    let logged: ReturnType<typeof jest.spyOn>;

    beforeAll(async () => {
      logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      app = await createClsApp(dataSource, new ClsTransactionSynchronizer(), { wrapAdapter: false });
    });
    afterAll(async () => {
      await app?.close();
      logged.mockRestore();
    });

    it("lets a second worker miss the first one's uncommitted row and insert a duplicate, and says why", async () => {
      const outcome = await raceTwoWorkers(clsWorkers(app, dataSource), uniquePrefix('order'));
      expect(outcome).toEqual({ inserted: [true, true], rows: 2, heldUntilCommit: false });
      expect(logged).toHaveBeenCalledWith(expect.stringContaining('pass `transactions.wrap(adapter)` to ClsPluginTransactional'));
      expect(logged).toHaveBeenCalledTimes(1);
    });
  });

  describe('with ClsTransactionSynchronizer wrapping the adapter', () => {
    let app: TestingModule;
    let workflow: InstanceType<typeof ClsOrderWorkflow>;
    let locks: LockService;

    beforeAll(async () => {
      app = await createClsApp(dataSource, new ClsTransactionSynchronizer(), { wrapAdapter: true });
      workflow = app.get(ClsOrderWorkflow);
      locks = app.get(LockService);
    });
    afterAll(() => app?.close());

    it('keeps the lock until COMMIT, so the second worker sees the committed row', async () => {
      const outcome = await raceTwoWorkers(clsWorkers(app, dataSource), uniquePrefix('order'));
      expect(outcome).toEqual({ inserted: [true, false], rows: 1, heldUntilCommit: true });
    });

    it('keeps that ordering over many concurrent workers', async () => {
      const workers = clsWorkers(app, dataSource);
      const refs = Array.from({ length: 3 }, () => uniquePrefix('order'));
      const results = await Promise.all(refs.flatMap((ref) => [1, 2, 3].map(() => workers.placeOrder(ref))));
      expect(results.filter(Boolean)).toHaveLength(refs.length);
      for (const ref of refs) expect(await workers.countOrders(ref)).toBe(1);
    });

    it('releases the lock after ROLLBACK, and the next worker inserts', async () => {
      const outcome = await rollbackThenRetry(clsWorkers(app, dataSource), uniquePrefix('order'));
      expect(outcome).toEqual({
        heldUntilRollback: true,
        lockedAfterRollback: false,
        error: 'declined',
        retried: true,
        rows: 1,
      });
    });

    it('runs two locked sections on one key in one transaction without waiting for itself, holding it until COMMIT', async () => {
      const outcome = await placeTwiceInOneTransaction(
        (ref, hooks) => workflow.placeOrderTwice(ref, hooks),
        (ref) => locks.isLocked(`order:${ref}`),
        uniquePrefix('order'),
      );
      expect(outcome).toEqual({ inserted: [true, false], heldBeforeCommit: true, heldAfterCommit: false });
    });

    it('holds a lock released in a savepoint (Propagation.Nested) until the outer transaction commits', async () => {
      const ref = uniquePrefix('order');
      let heldAfterSavepoint = false;
      await workflow.placeOrderInSavepoint(ref, {
        beforeCommit: async () => {
          heldAfterSavepoint = await locks.isLocked(`order:${ref}`);
        },
      });
      expect(heldAfterSavepoint).toBe(true);
      expect(await locks.isLocked(`order:${ref}`)).toBe(false);
    });

    it('releases at once when the locked code runs outside the transaction (Propagation.NotSupported)', async () => {
      const ref = uniquePrefix('order');
      await expect(workflow.insertOutsideTransaction(ref)).resolves.toEqual({ lockedAfterInsert: false });
    });

    it('releases at once outside any transaction', async () => {
      const ref = uniquePrefix('order');
      let lockedInside = false;
      await locks.using(`order:${ref}`, async () => {
        lockedInside = await locks.isLocked(`order:${ref}`);
      });
      expect(lockedInside).toBe(true);
      expect(await locks.isLocked(`order:${ref}`)).toBe(false);
    });
  });
});
