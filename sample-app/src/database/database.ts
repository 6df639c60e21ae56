import type { JobOutboxStore } from 'nestjs-redis-lock';

/** Rows and the count of rows a statement changed. */
export interface QueryResult<Row> {
  readonly rows: Row[];
  readonly rowCount: number;
}

/**
 * The sample's tiny database port: SQL in PostgreSQL's dialect, run either by an embedded PGlite
 * or by a real PostgreSQL server. `transaction(fn)` makes every `query` inside `fn` (however deep)
 * part of one transaction, and runs it as a `runInTransaction` unit of work, so locks released
 * inside it are released only after COMMIT/ROLLBACK and jobs scheduled inside it are enqueued only
 * on COMMIT: through the transactional outbox (`jobOutbox()`), their rows commit with the data.
 */
export abstract class Database {
  abstract query<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<Row>>;
  abstract transaction<T>(work: () => Promise<T>): Promise<T>;
  /**
   * The delay queue's outbox on this database: jobs scheduled in `transaction()` are inserted in
   * that transaction (the table comes from SCHEMA), and its relay reads rows left behind (a crash,
   * Redis down) on a connection of its own.
   */
  abstract jobOutbox(): JobOutboxStore;
  abstract ping(): Promise<void>;
  abstract close(): Promise<void>;
  /** 'pglite (embedded)' or 'postgresql'. */
  abstract readonly kind: string;
}
