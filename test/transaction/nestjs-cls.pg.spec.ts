import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import type { DataSource } from 'typeorm';
import { LockService } from '../../lib/index.js';
import { ordersDataSource } from '../fixtures/tx-datasource.js';
import { raceTwoWorkers, workflowWorkers } from '../fixtures/tx-race.js';
import { startLocalPostgres, type LocalPostgres } from '../support/postgres.js';
import { uniquePrefix } from '../support/test-app.js';
import { itReleasesLocksWithTheTransactionalWorkflow } from './support/order-race-scenarios.js';

// @nestjs-cls/transactional is CommonJS and require()s Nest 12's ES modules. Jest links a CommonJS
// dependency of an ES module before that graph's ES modules have run, which Node 24 reports as a
// require(esm) cycle; loaded here, after the static imports above ran, @nestjs/common is complete.
const { ClsTransactionSynchronizer } = await import('../../lib/transaction-adapters/nestjs-cls.js');
const { ClsOrderWorkflow, createClsApp } = await import('../fixtures/tx-nestjs-cls.js');

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
      const workers = workflowWorkers(app.get(ClsOrderWorkflow), app.get(LockService), dataSource);
      const outcome = await raceTwoWorkers(workers, uniquePrefix('order'));
      expect(outcome).toEqual({ inserted: [true, true], rows: 2, heldUntilCommit: false });
      expect(logged).toHaveBeenCalledWith(expect.stringContaining('pass `transactions.wrap(adapter)` to ClsPluginTransactional'));
      expect(logged).toHaveBeenCalledTimes(1);
    });
  });

  describe('with ClsTransactionSynchronizer wrapping the adapter', () => {
    let app: TestingModule;

    beforeAll(async () => {
      app = await createClsApp(dataSource, new ClsTransactionSynchronizer(), { wrapAdapter: true });
    });
    afterAll(() => app?.close());

    itReleasesLocksWithTheTransactionalWorkflow(
      () => {
        const workflow = app.get(ClsOrderWorkflow);
        const locks = app.get(LockService);
        return { workflow, locks, workers: workflowWorkers(workflow, locks, dataSource) };
      },
      { savepoint: 'Propagation.Nested', notSupported: 'Propagation.NotSupported' },
    );
  });
});
