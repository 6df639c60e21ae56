/**
 * `nestjs-redis-lock/transaction/typeorm-transactional`: locks released and jobs scheduled inside a
 * `typeorm-transactional` transaction take effect after it commits or rolls back.
 *
 * @module nestjs-redis-lock/transaction/typeorm-transactional
 */
import { Logger } from '@nestjs/common';
import { runOnTransactionComplete } from 'typeorm-transactional';
// Not re-exported from the package root; the same functions its @Transactional uses to find the
// current transaction.
import { getEntityManagerByDataSourceName, getTransactionalContext } from 'typeorm-transactional/dist/common/index.js';
import type { DataSource, EntitySubscriberInterface, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import type { TransactionSynchronization, TransactionSynchronizer } from '../core/transaction/transaction-synchronizer.interface.js';
import { SynchronizationList } from '../core/transaction/synchronization-list.js';

/**
 * Makes locks released (and jobs scheduled) inside a `typeorm-transactional` `@Transactional()`
 * method or `runInTransaction()` take effect only after that transaction commits or rolls back.
 *
 * The transaction is found the way `typeorm-transactional` finds it (the entity manager stored in
 * its context for the data source). The synchronizations are tied to that transaction's TypeORM
 * query runner and run from a TypeORM subscriber on the data source, when the outermost transaction
 * of the query runner commits or rolls back: a lock released inside `Propagation.NESTED`
 * (a savepoint) is held until the outer transaction ends, and the release is done before the
 * `@Transactional()` method's promise resolves. `runOnTransactionComplete` is the fallback for a
 * transaction whose ROLLBACK itself failed.
 *
 * No change to `@Transactional()` code is needed; pass an instance as the module's `transactions`.
 *
 * @example
 * import { TypeOrmTransactionalSynchronizer } from 'nestjs-redis-lock/transaction/typeorm-transactional';
 *
 * initializeTransactionalContext({ storageDriver: StorageDriver.AUTO });   // before the app is created
 *
 * \@Module({
 *   imports: [
 *     TypeOrmModule.forRootAsync({
 *       useFactory: () => options,
 *       dataSourceFactory: async (o) => addTransactionalDataSource(new DataSource(o!)),
 *     }),
 *     RedisLockModule.forRoot({ redis: process.env.REDIS_URL, transactions: new TypeOrmTransactionalSynchronizer() }),
 *   ],
 * })
 * export class AppModule {}
 */
export class TypeOrmTransactionalSynchronizer implements TransactionSynchronizer {
  private readonly connectionName: string;
  private readonly logger = new Logger('RedisLockTransactions');
  private readonly pending = new WeakMap<QueryRunner, SynchronizationList>();
  private readonly subscriber: EntitySubscriberInterface;

  constructor(
    options: {
      /**
       * The name the data source was added under (`addTransactionalDataSource({ name, dataSource })`),
       * the same as `@Transactional({ connectionName })`. Default `'default'`.
       */
      connectionName?: string;
    } = {},
  ) {
    this.connectionName = options.connectionName ?? 'default';
    this.subscriber = {
      beforeTransactionCommit: (event: TransactionCommitEvent) => this.beforeCommit(event.queryRunner),
      afterTransactionCommit: (event: TransactionCommitEvent) => this.afterEnd(event.queryRunner, 'committed'),
      afterTransactionRollback: (event: TransactionRollbackEvent) => this.afterEnd(event.queryRunner, 'rolled-back'),
    };
  }

  isActive(): boolean {
    const queryRunner = this.currentQueryRunner();
    return queryRunner !== undefined && queryRunner.isTransactionActive && !queryRunner.isReleased;
  }

  register(synchronization: TransactionSynchronization): void {
    const queryRunner = this.currentQueryRunner();
    if (!queryRunner?.isTransactionActive) throw new Error('register() called outside a transaction; check isActive() first');
    this.listenTo(queryRunner.connection);
    let list = this.pending.get(queryRunner);
    if (!list) {
      list = new SynchronizationList(this.logger);
      this.pending.set(queryRunner, list);
      this.armFallback(queryRunner);
    }
    list.add(synchronization);
  }

  currentTransaction(): object | undefined {
    return this.isActive() ? this.currentQueryRunner() : undefined;
  }

  private currentQueryRunner(): QueryRunner | undefined {
    let context: ReturnType<typeof getTransactionalContext>;
    try {
      context = getTransactionalContext();
    } catch {
      return undefined; // initializeTransactionalContext() was not called: no transactions to follow
    }
    if (!context?.active) return undefined;
    return getEntityManagerByDataSourceName(context, this.connectionName)?.queryRunner ?? undefined;
  }

  /** Subscribes once per data source (TypeORM rebuilds `subscribers` on initialize, so check each time). */
  private listenTo(dataSource: DataSource): void {
    if (!dataSource.subscribers.includes(this.subscriber)) dataSource.subscribers.push(this.subscriber);
  }

  private async beforeCommit(queryRunner: QueryRunner): Promise<void> {
    // Depth 1: the outermost transaction is about to COMMIT (deeper levels release a savepoint).
    const depth = (queryRunner as QueryRunner & { transactionDepth?: number }).transactionDepth ?? 1;
    if (depth <= 1) await this.pending.get(queryRunner)?.beforeCommit();
  }

  private async afterEnd(queryRunner: QueryRunner, status: 'committed' | 'rolled-back', force = false): Promise<void> {
    if (queryRunner.isTransactionActive && !force) return; // a savepoint ended; the transaction goes on
    const list = this.pending.get(queryRunner);
    if (!list) return;
    this.pending.delete(queryRunner);
    await list.complete(status);
  }

  /**
   * typeorm-transactional emits `end` once its wrapper settles, even when ROLLBACK failed and
   * TypeORM broadcast nothing. It fires at the end of the innermost `@Transactional` that started a
   * transaction, which for a savepoint is too early: only act once the query runner is done.
   */
  private armFallback(queryRunner: QueryRunner): void {
    try {
      runOnTransactionComplete((error) => {
        if (!queryRunner.isTransactionActive || queryRunner.isReleased) {
          void this.afterEnd(queryRunner, error ? 'rolled-back' : 'committed', true).catch(() => undefined);
        }
      });
    } catch {
      // No hook context (a transaction begun outside typeorm-transactional): the subscriber covers it.
    }
  }
}
