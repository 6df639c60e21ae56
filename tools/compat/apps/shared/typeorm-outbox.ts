/**
 * `nestjs-redis-lock/outbox/postgres` on TypeORM, on a real PostgreSQL (a private server, see
 * postgres-server.ts): a job scheduled inside a transaction is written to the outbox table in that
 * transaction and relayed to Redis once it commits; a rolled-back transaction schedules nothing; the
 * relay (a TypeORM `DataSource`) deletes the rows it relayed. Once through typeorm-transactional
 * (`inTypeOrmTransaction(() => dataSource.manager)`), once through @nestjs-cls/transactional's
 * TypeORM adapter (`inClsTransaction(txHost)`), each with its lock adapter (a lock released inside
 * the transaction is released after COMMIT).
 */
import { Global, Injectable, Module, type INestApplicationContext, type Provider } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClsPluginTransactional, Transactional as ClsTransactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { DelayQueueService, LockService, RedisLockModule } from 'nestjs-redis-lock';
import { inClsTransaction, inTypeOrmTransaction, PostgresJobOutbox } from 'nestjs-redis-lock/outbox/postgres';
import { ClsTransactionSynchronizer } from 'nestjs-redis-lock/transaction/nestjs-cls';
import { TypeOrmTransactionalSynchronizer } from 'nestjs-redis-lock/transaction/typeorm-transactional';
import { DataSource } from 'typeorm';
import { addTransactionalDataSource, initializeTransactionalContext, StorageDriver, Transactional } from 'typeorm-transactional';
import type { ExtraCheck } from './app-flavor.js';
import { assert, assertEqual, deferred, within } from './check-list.js';
import { startPostgres, type CompatPostgres } from './postgres-server.js';

const WAIT_MS = 30_000;
const TOPIC = 'compat.order.expire';
/** The name the outbox's data source is added under in typeorm-transactional (typeorm-transactions.ts uses 'default'). */
const CONNECTION = 'outbox';

class PaymentDeclined extends Error {}

/** What the two variants share: a PostgreSQL with an orders table, a consumer, and the assertions. */
async function withOrders(run: (postgres: CompatPostgres, ranJobs: Array<{ id: string; ref: string }>) => Promise<void>): Promise<void> {
  const postgres = await startPostgres();
  try {
    await run(postgres, []);
  } finally {
    await postgres.stop();
  }
}

function dataSourceOn(postgres: CompatPostgres): DataSource {
  return new DataSource({
    type: 'postgres',
    host: postgres.host,
    port: postgres.port,
    username: postgres.user,
    database: postgres.database,
    poolSize: 4,
  });
}

/** The committed order's job ran once, the rolled-back one's never; the relay deleted the relayed row. */
async function checkOutcome(
  dataSource: DataSource,
  ran: ReadonlyArray<{ id: string; ref: string }>,
  committedId: string,
  waitForJob: () => Promise<void>,
): Promise<void> {
  await waitForJob();
  assertEqual(ran.map((job) => job.ref).join(','), 'ok-1', 'jobs run right after the committed order');
  assertEqual(ran[0].id, committedId, 'id of the job that ran');
  const orders = (await dataSource.query('SELECT ref FROM compat_orders ORDER BY ref')) as Array<{ ref: string }>;
  assertEqual(orders.map((row) => row.ref).join(','), 'ok-1', 'orders committed');
  // The relay deletes a row after its job reached Redis: wait for that, then nothing is left behind.
  const deadline = Date.now() + WAIT_MS;
  let left = -1;
  while (Date.now() < deadline) {
    left = Number(((await dataSource.query('SELECT count(*)::int AS n FROM redis_lock_job_outbox')) as Array<{ n: number }>)[0].n);
    if (left === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assertEqual(left, 0, 'outbox rows left after the relay');
  // The rolled-back order wrote no row, so no job can come later either.
  await new Promise((resolve) => setTimeout(resolve, 500));
  assertEqual(ran.length, 1, 'jobs run (the rolled-back order must schedule none)');
}

/** What `Orders.place` of either app gives back. */
interface PlacingOrders {
  place(ref: string, fail?: boolean): Promise<{ id: string; heldAfterRelease: boolean }>;
}

/**
 * Places a committed order and a declined one through the app's `Orders`: the lock taken in the
 * transaction is held until COMMIT, and the outcome is `checkOutcome`'s.
 */
async function placeOrders(
  context: INestApplicationContext,
  orders: PlacingOrders,
  dataSource: DataSource,
  ran: Array<{ id: string; ref: string }>,
  lockPrefix: string,
): Promise<void> {
  const ranOnce = deferred();
  context.get(DelayQueueService).consume<{ ref: string }>(TOPIC, (payload, job) => {
    ran.push({ id: job.id, ref: payload.ref });
    ranOnce.resolve();
  });
  const placed = await orders.place('ok-1');
  assert(placed.heldAfterRelease, 'the lock was released inside the transaction, before COMMIT');
  assert(!(await context.get(LockService).isLocked(`${lockPrefix}:ok-1`)), 'the lock is still held after COMMIT');
  let declined = false;
  await orders.place('declined-1', true).catch((error: unknown) => {
    if (!(error instanceof PaymentDeclined)) throw error;
    declined = true;
  });
  assert(declined, 'the failing order did not throw');
  await checkOutcome(dataSource, ran, placed.id, () => within(WAIT_MS, "the committed order's job", ranOnce.promise));
}

export const typeormTransactionalOutboxCheck: ExtraCheck = {
  id: 'tt-outbox',
  name: 'outbox/postgres with typeorm-transactional: inTypeOrmTransaction, TypeORM DataSource relay, on PostgreSQL',
  run: (redisUrl, keyPrefix) =>
    withOrders(async (postgres, ran) => {
      initializeTransactionalContext({ storageDriver: StorageDriver.ASYNC_LOCAL_STORAGE });
      const dataSource = addTransactionalDataSource({ name: CONNECTION, dataSource: dataSourceOn(postgres) });
      await dataSource.initialize();
      await dataSource.query('CREATE TABLE compat_orders (ref text PRIMARY KEY)');

      @Injectable()
      class Orders {
        constructor(
          private readonly queue: DelayQueueService,
          private readonly locks: LockService,
        ) {}

        /** The order row and its job commit together; a lock released inside is released after COMMIT. */
        @Transactional({ connectionName: CONNECTION })
        async place(ref: string, fail = false): Promise<{ id: string; heldAfterRelease: boolean }> {
          const lock = await this.locks.acquire(`compat:tt-outbox:${ref}`);
          await dataSource.query('INSERT INTO compat_orders (ref) VALUES ($1)', [ref]);
          const id = await this.queue.schedule(TOPIC, { ref }, { id: `expire:${ref}` });
          await lock.release();
          const heldAfterRelease = await this.locks.isLocked(`compat:tt-outbox:${ref}`);
          if (fail) throw new PaymentDeclined();
          return { id, heldAfterRelease };
        }
      }

      @Module({
        imports: [
          RedisLockModule.forRoot({
            redis: redisUrl,
            keyPrefix,
            transactions: new TypeOrmTransactionalSynchronizer({ connectionName: CONNECTION }),
            delayQueue: {
              // typeorm-transactional makes dataSource.manager the current transaction's manager.
              outbox: new PostgresJobOutbox({
                transaction: inTypeOrmTransaction(() => dataSource.manager),
                relay: dataSource,
                applyMigrationAtStart: true,
              }),
            },
          }),
        ],
        providers: [Orders],
      })
      class TypeOrmOutboxModule {}

      const context = await NestFactory.createApplicationContext(TypeOrmOutboxModule, { logger: ['error', 'warn'], abortOnError: false });
      try {
        await placeOrders(context, context.get(Orders), dataSource, ran, 'compat:tt-outbox');
      } finally {
        await context.close();
        await dataSource.destroy();
      }
    }),
};

export const clsTypeOrmOutboxCheck: ExtraCheck = {
  id: 'cls-outbox',
  name: 'outbox/postgres with @nestjs-cls/transactional-adapter-typeorm: inClsTransaction, on PostgreSQL',
  run: (redisUrl, keyPrefix) =>
    withOrders(async (postgres, ran) => {
      const dataSource = dataSourceOn(postgres);
      await dataSource.initialize();
      await dataSource.query('CREATE TABLE compat_orders (ref text PRIMARY KEY)');

      @Global()
      @Module({ providers: [{ provide: DataSource, useValue: dataSource } as Provider], exports: [DataSource] })
      class DatabaseModule {}

      @Injectable()
      class Orders {
        constructor(
          private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
          private readonly queue: DelayQueueService,
          private readonly locks: LockService,
        ) {}

        @ClsTransactional()
        async place(ref: string, fail = false): Promise<{ id: string; heldAfterRelease: boolean }> {
          const lock = await this.locks.acquire(`compat:cls-outbox:${ref}`);
          await this.txHost.tx.query('INSERT INTO compat_orders (ref) VALUES ($1)', [ref]);
          const id = await this.queue.schedule(TOPIC, { ref }, { id: `expire:${ref}` });
          await lock.release();
          const heldAfterRelease = await this.locks.isLocked(`compat:cls-outbox:${ref}`);
          if (fail) throw new PaymentDeclined();
          return { id, heldAfterRelease };
        }
      }

      const transactions = new ClsTransactionSynchronizer();
      @Module({
        imports: [
          DatabaseModule,
          ClsModule.forRoot({
            global: true,
            plugins: [
              new ClsPluginTransactional({
                imports: [DatabaseModule],
                adapter: transactions.wrap(new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource })),
              }),
            ],
          }),
          RedisLockModule.forRootAsync({
            isGlobal: true,
            inject: [TransactionHost, DataSource],
            useFactory: (txHost: TransactionHost, ds: DataSource) => ({
              redis: redisUrl,
              keyPrefix,
              transactions,
              delayQueue: {
                outbox: new PostgresJobOutbox({ transaction: inClsTransaction(txHost), relay: ds, applyMigrationAtStart: true }),
              },
            }),
          }),
        ],
        providers: [Orders],
      })
      class ClsOutboxModule {}

      const context = await NestFactory.createApplicationContext(ClsOutboxModule, { logger: ['error', 'warn'], abortOnError: false });
      try {
        await placeOrders(context, context.get(Orders), dataSource, ran, 'compat:cls-outbox');
      } finally {
        await context.close();
        await dataSource.destroy();
      }
    }),
};
