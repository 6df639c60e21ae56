/**
 * How the outbox reaches the caller's current transaction (for adapters: the library's executors
 * are `inPgTransaction`, `inTypeOrmTransaction` and `inClsTransaction`). `current()` returns a
 * runner bound to that transaction, or `undefined` when the calling async context has none.
 */
export interface OutboxTransactionExecutor {
  /** Names the executor in error messages. */
  readonly description: string;
  /**
   * A runner bound to the calling async context's transaction, or `undefined` when it has none. The
   * runner runs one SQL statement with `$1…` parameters and resolves to its rows.
   */
  current(): ((sql: string, params: readonly unknown[]) => Promise<Array<Record<string, unknown>>>) | undefined;
  /**
   * Whether a transaction is open now in the calling async context, when the executor can tell
   * (not merely a client left in an AsyncLocalStorage after its COMMIT). Optional: with it, a
   * `schedule()` in such a transaction that the transaction port does not see is refused.
   */
  inTransaction?(): boolean;
}

/** Runs one SQL statement with `$1…` parameters and resolves to its rows. */
export type SqlRunner = NonNullable<ReturnType<OutboxTransactionExecutor['current']>>;

/** What `pg`'s `Client`/`PoolClient`, a PGlite database and its transactions have in common. */
export interface QueryableWithRows {
  /** Runs `sql` with `$1…` parameters; resolves to the result, whose `rows` the outbox reads. */
  query(sql: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
  /** `pg` 8.16+: the server's last transaction status, `'T'` (in a transaction), `'E'` (in a failed one), `'I'` (idle). */
  getTransactionStatus?(): string | null;
}

/** A TypeORM `EntityManager` (only what the outbox uses). */
export interface EntityManagerLike {
  /** Runs `sql` with `$1…` parameters (TypeORM's raw query). */
  query(sql: string, params?: unknown[]): Promise<unknown>;
  /** The manager's query runner: set for a manager of a transaction (`dataSource.transaction(manager => …)`). */
  readonly queryRunner?: {
    /** Whether the runner's transaction is open: the outbox writes only inside one. */
    readonly isTransactionActive: boolean;
    /** Whether the runner was released (its transaction is over). */
    readonly isReleased: boolean;
  };
}

/** `@nestjs-cls/transactional`'s `TransactionHost` (only what the outbox uses). */
export interface TransactionHostLike {
  /** Whether the current call runs inside `@Transactional()` / `withTransaction()`. */
  isTransactionActive(): boolean;
  /** The transaction's client (the adapter's `tx`): a pg client or a TypeORM `EntityManager`. */
  readonly tx: unknown;
}

/**
 * The transaction of a `pg` client or of PGlite: `currentClient` returns the `Client` / `PoolClient`
 * that has run `BEGIN` for the calling context (e.g. from your own AsyncLocalStorage), or the `tx`
 * that PGlite's `db.transaction(async (tx) => …)` passed to it; nothing outside a transaction.
 *
 * @example
 * const txClient = new AsyncLocalStorage<PoolClient>();
 * const outbox = new PostgresJobOutbox({ transaction: inPgTransaction(() => txClient.getStore()), relay: pool });
 */
export function inPgTransaction(currentClient: () => QueryableWithRows | null | undefined): OutboxTransactionExecutor {
  return {
    description: 'inPgTransaction(currentClient)',
    current: () => {
      const client = currentClient();
      return client ? (sql, params) => client.query(sql, [...params]).then((r) => r.rows as Array<Record<string, unknown>>) : undefined;
    },
    // What the server last said of the client's session: a client left in the store after its
    // COMMIT is idle. Unknown (older pg, PGlite) counts as not open: nothing is refused.
    inTransaction: () => {
      const status = currentClient()?.getTransactionStatus?.();
      return status === 'T' || status === 'E';
    },
  };
}

/**
 * The transaction of a TypeORM `EntityManager`: `currentManager` returns the manager of the calling
 * context's transaction (`dataSource.transaction(async (manager) => …)`). A manager whose query
 * runner has no transaction open counts as none. With `typeorm-transactional`, whose
 * `addTransactionalDataSource` makes `dataSource.manager` the current transaction's manager:
 * `inTypeOrmTransaction(() => dataSource.manager)`.
 */
export function inTypeOrmTransaction(currentManager: () => EntityManagerLike | null | undefined): OutboxTransactionExecutor {
  return {
    description: 'inTypeOrmTransaction(currentManager)',
    current: () => {
      const manager = currentManager();
      const runner = manager?.queryRunner;
      if (!manager || !runner?.isTransactionActive || runner.isReleased) return undefined;
      return (sql, params) => manager.query(sql, [...params]).then(rowsOf);
    },
    inTransaction: () => {
      const runner = currentManager()?.queryRunner;
      return runner?.isTransactionActive === true && !runner.isReleased;
    },
  };
}

/**
 * The transaction of `@nestjs-cls/transactional`: the `TransactionHost`'s `tx`, whatever adapter
 * wraps it, as long as it can run raw SQL with `$1` parameters: TypeORM (`EntityManager.query`),
 * `pg` clients (`query`), Prisma interactive transactions (`$queryRawUnsafe`).
 *
 * @example
 * new PostgresJobOutbox({ transaction: inClsTransaction(txHost), relay: dataSource })
 */
export function inClsTransaction(transactionHost: TransactionHostLike): OutboxTransactionExecutor {
  return {
    description: 'inClsTransaction(transactionHost)',
    inTransaction: () => transactionHost.isTransactionActive(),
    current: () => {
      if (!transactionHost.isTransactionActive()) return undefined;
      const tx = transactionHost.tx as Record<string, unknown>;
      if (typeof tx?.query === 'function') {
        return (sql, params) => (tx.query as (s: string, p: unknown[]) => Promise<unknown>)(sql, [...params]).then(rowsOf);
      }
      if (typeof tx?.$queryRawUnsafe === 'function') {
        return (sql, params) => (tx.$queryRawUnsafe as (s: string, ...p: unknown[]) => Promise<unknown>)(sql, ...params).then(rowsOf);
      }
      throw new TypeError(
        "inClsTransaction: the TransactionHost's tx can run neither query(sql, params) nor $queryRawUnsafe(sql, ...params); " +
          'pass an executor of your own ({ description, current() }) that runs SQL in that transaction.',
      );
    },
  };
}

/**
 * `pg` and PGlite answer `{ rows }`; TypeORM answers the rows as an array, except for UPDATE and
 * DELETE on PostgreSQL: `[rows, rowCount]` (a row is never an array, so the two cannot be confused).
 */
export function rowsOf(result: unknown): Array<Record<string, unknown>> {
  if (Array.isArray(result)) {
    if (result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number')
      return result[0] as Array<Record<string, unknown>>;
    return result as Array<Record<string, unknown>>;
  }
  const rows = (result as { rows?: unknown } | null)?.rows;
  return Array.isArray(rows) ? (rows as Array<Record<string, unknown>>) : [];
}
