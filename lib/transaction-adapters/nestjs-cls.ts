/**
 * `nestjs-redis-lock/transaction/nestjs-cls`: locks released and jobs scheduled inside a
 * `@nestjs-cls/transactional` transaction take effect after it commits or rolls back.
 *
 * @module nestjs-redis-lock/transaction/nestjs-cls
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@nestjs/common';
import { TransactionHost, type TransactionalAdapter } from '@nestjs-cls/transactional';
import type { TransactionSynchronization, TransactionSynchronizer } from '../core/transaction/transaction-synchronizer.interface.js';
import { SynchronizationList } from '../core/transaction/synchronization-list.js';

/**
 * Any `@nestjs-cls/transactional` adapter.
 *
 * @inline
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the adapter's own connection and options types
export type AnyTransactionalAdapter = TransactionalAdapter<any, any, any>;
type AdapterOptions = ReturnType<AnyTransactionalAdapter['optionsFactory']>;

/**
 * Makes locks released (and jobs scheduled) inside a `@nestjs-cls/transactional` transaction take
 * effect only after that transaction commits or rolls back.
 *
 * `@nestjs-cls/transactional` has no commit hooks of its own, so the synchronizer wraps the adapter:
 * every transaction the adapter starts runs inside a frame that collects the synchronizations, and
 * the frame completes when the adapter's own `wrapWithTransaction` settles (after COMMIT or
 * ROLLBACK). Nested transactions (savepoints, `Propagation.Nested`) join the outer frame: a lock
 * released in a savepoint is held until the outermost transaction ends. Code running with
 * `Propagation.NotSupported` / `Never` inside a transaction is not in it, and releases at once.
 *
 * Works with any adapter (TypeORM, Prisma, Knex, Kysely, Drizzle, pg-promise, ...).
 *
 * @example
 * import { ClsTransactionSynchronizer } from 'nestjs-redis-lock/transaction/nestjs-cls';
 *
 * const transactions = new ClsTransactionSynchronizer();
 *
 * \@Module({
 *   imports: [
 *     ClsModule.forRoot({
 *       plugins: [
 *         new ClsPluginTransactional({
 *           imports: [DatabaseModule],
 *           adapter: transactions.wrap(new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource })),
 *         }),
 *       ],
 *     }),
 *     RedisLockModule.forRoot({ redis: process.env.REDIS_URL, transactions }),
 *   ],
 * })
 * export class AppModule {}
 */
export class ClsTransactionSynchronizer implements TransactionSynchronizer {
  private readonly frames = new AsyncLocalStorage<SynchronizationList>();
  private readonly logger = new Logger('RedisLockTransactions');
  private wrapped = false;
  private warnedUnwrapped = false;

  constructor(
    private readonly options: {
      /**
       * The `connectionName` given to `ClsPluginTransactional`, when the application has several.
       * Default: the unnamed (default) connection.
       */
      connectionName?: string;
    } = {},
  ) {}

  /**
   * Returns the adapter with transaction hooks added; pass the result to `ClsPluginTransactional`.
   * Everything else about the adapter (its options, lifecycle hooks, typing) is unchanged.
   */
  wrap<TAdapter extends AnyTransactionalAdapter>(adapter: TAdapter): TAdapter {
    this.wrapped = true;
    return new Proxy(adapter, {
      get: (target, property, receiver) => {
        const value = Reflect.get(target, property, receiver);
        if (property !== 'optionsFactory' || typeof value !== 'function') return value;
        return (...args: unknown[]) => this.wrapOptions(Reflect.apply(value, receiver, args) as AdapterOptions);
      },
    });
  }

  isActive(): boolean {
    const frame = this.frames.getStore();
    const inTransaction = this.transactionHostSaysActive();
    if (!frame || frame.isCompleted) {
      if (inTransaction === true) this.warnUnwrapped();
      return false;
    }
    // No host (not initialised yet): trust the frame, which only exists inside wrapWithTransaction.
    return inTransaction !== false;
  }

  register(synchronization: TransactionSynchronization): void {
    const frame = this.frames.getStore();
    if (!frame) throw new Error('register() called outside a transaction; check isActive() first');
    frame.add(synchronization);
  }

  currentTransaction(): object | undefined {
    return this.isActive() ? this.frames.getStore() : undefined;
  }

  private wrapOptions(options: AdapterOptions): AdapterOptions {
    const wrapWithTransaction = options.wrapWithTransaction;
    return {
      ...options,
      wrapWithTransaction: (txOptions, fn, setTx) =>
        this.runTransaction((frame) =>
          wrapWithTransaction(
            txOptions,
            async (...args: unknown[]) => {
              const result = await fn(...args);
              await frame.beforeCommit();
              return result;
            },
            setTx,
          ),
        ),
    };
  }

  private async runTransaction<T>(start: (frame: SynchronizationList) => Promise<T>): Promise<T> {
    const frame = new SynchronizationList(this.logger);
    let result: T;
    try {
      result = await this.frames.run(frame, () => start(frame));
    } catch (error) {
      await frame.complete('rolled-back');
      throw error;
    }
    await frame.complete('committed');
    return result;
  }

  /** `true`/`false` from the TransactionHost, `undefined` when there is none to ask. */
  private transactionHostSaysActive(): boolean | undefined {
    try {
      return TransactionHost.getInstance(this.options.connectionName).isTransactionActive();
    } catch {
      return undefined;
    }
  }

  private warnUnwrapped(): void {
    if (this.warnedUnwrapped) return;
    this.warnedUnwrapped = true;
    this.logger.error(
      this.wrapped
        ? 'A @nestjs-cls/transactional transaction is active, but it was not started by an adapter wrapped with ' +
            'this ClsTransactionSynchronizer (another connectionName?). Locks released in it are released before COMMIT.'
        : 'A @nestjs-cls/transactional transaction is active, but its adapter was not wrapped: pass ' +
            '`transactions.wrap(adapter)` to ClsPluginTransactional. Until then locks released in a transaction ' +
            'are released before COMMIT.',
    );
  }
}
