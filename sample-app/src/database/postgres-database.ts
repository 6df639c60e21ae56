import { AsyncLocalStorage } from 'node:async_hooks';
import { Pool, type PoolClient } from 'pg';
import { runInTransaction } from 'nestjs-redis-lock';
import { inPgTransaction, PostgresJobOutbox } from 'nestjs-redis-lock/outbox/postgres';
import { Database, type QueryResult } from './database.js';

/** A real PostgreSQL server, used when DATABASE_URL is set. */
export class PostgresDatabase extends Database {
  readonly kind = 'postgresql';
  private readonly pool: Pool;
  private readonly current = new AsyncLocalStorage<PoolClient>();

  constructor(url: string) {
    super();
    this.pool = new Pool({ connectionString: url, max: 20 });
  }

  async query<Row>(sql: string, params: unknown[] = []): Promise<QueryResult<Row>> {
    const target = this.current.getStore() ?? this.pool;
    const result = await target.query(sql, params);
    return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
  }

  transaction<T>(work: () => Promise<T>): Promise<T> {
    if (this.current.getStore()) return work();
    return runInTransaction(async () => {
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN');
        const result = await this.current.run(client, work);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    });
  }

  jobOutbox(): PostgresJobOutbox {
    // The relay takes its connections from the pool, outside any transaction (LISTEN holds one).
    return new PostgresJobOutbox({ transaction: inPgTransaction(() => this.current.getStore()), relay: this.pool });
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
