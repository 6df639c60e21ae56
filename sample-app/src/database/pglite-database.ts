import { AsyncLocalStorage } from 'node:async_hooks';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { runInTransaction } from 'nestjs-redis-lock';
import { inPgTransaction, PostgresJobOutbox } from 'nestjs-redis-lock/outbox/postgres';
import { Database, type QueryResult } from './database.js';

/** Embedded PostgreSQL (WASM, in memory): the default, so the sample needs no database server. */
export class PgliteDatabase extends Database {
  readonly kind = 'pglite (embedded)';
  private readonly current = new AsyncLocalStorage<Transaction>();

  private constructor(private readonly db: PGlite) {
    super();
  }

  static async open(): Promise<PgliteDatabase> {
    return new PgliteDatabase(await PGlite.create());
  }

  async query<Row>(sql: string, params: unknown[] = []): Promise<QueryResult<Row>> {
    const target = this.current.getStore() ?? this.db;
    const result = await target.query<Row>(sql, params);
    return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
  }

  async exec(sql: string): Promise<void> {
    await this.db.exec(sql);
  }

  transaction<T>(work: () => Promise<T>): Promise<T> {
    if (this.current.getStore()) return work();
    // PGlite serialises transactions itself: one connection, one transaction at a time.
    return runInTransaction(() => this.db.transaction((tx) => this.current.run(tx, work)));
  }

  jobOutbox(): PostgresJobOutbox {
    // One connection: the relay's statements queue behind a transaction in progress, which is fine.
    return new PostgresJobOutbox({ transaction: inPgTransaction(() => this.current.getStore()), relay: this.db });
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
