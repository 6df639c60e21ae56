import type { SqlRunner } from './sql-executors.js';
import { rowsOf } from './sql-executors.js';

/**
 * What the relay runs its short statements on, outside any application transaction: a `pg` `Pool`
 * (recommended) or `Client`, a PGlite database, or a TypeORM `DataSource` (each statement on a
 * fresh query runner, so never inside a `typeorm-transactional` transaction of the caller).
 */
export type OutboxRelayConnection = object;

/** The relay's connection, reduced to what the store needs. Internal. */
export interface RelaySql {
  readonly run: SqlRunner;
  /** Runs several statements at once (the migration). */
  readonly exec: (sql: string) => Promise<void>;
  /** LISTEN on `channel`, when the connection can; resolves to the function that stops it. */
  readonly listen?: (channel: string, onNotify: () => void, onError: (error: unknown) => void) => Promise<() => Promise<void>>;
}

type Fn = (...args: any[]) => any;
type Loose = Record<string, any>;

/** Recognises the connection by its shape (no import of the drivers: they are optional peers). */
export function relaySqlOf(connection: OutboxRelayConnection): RelaySql | undefined {
  const c = connection as Loose;
  if (typeof c.createQueryRunner === 'function') return typeOrmDataSource(c);
  if (typeof c.query !== 'function') return undefined;
  if (typeof c.listen === 'function' && typeof c.exec === 'function' && typeof c.transaction === 'function') return pglite(c);
  if (typeof c.connect === 'function' && 'totalCount' in c) return pgPool(c);
  return pgClient(c);
}

function pgPool(pool: Loose): RelaySql {
  return {
    run: (sql, params) => (pool.query as Fn)(sql, [...params]).then(rowsOf),
    exec: async (sql) => void (await (pool.query as Fn)(sql)),
    listen: async (channel, onNotify, onError) => {
      // LISTEN needs a session of its own: a pooled connection kept out of the pool until stopped.
      const client = await (pool.connect as Fn)();
      let ended = false;
      const onNotification = (message: { channel: string }) => message.channel === channel && onNotify();
      const onClientError = (error: unknown) => {
        ended = true;
        client.release(error);
        onError(error);
      };
      client.on('notification', onNotification);
      client.on('error', onClientError);
      await client.query(`LISTEN ${channel}`);
      return async () => {
        if (ended) return;
        ended = true;
        client.off('notification', onNotification);
        client.off('error', onClientError);
        await client.query(`UNLISTEN ${channel}`).catch(() => undefined);
        client.release();
      };
    },
  };
}

function pgClient(client: Loose): RelaySql {
  return {
    run: (sql, params) => (client.query as Fn)(sql, [...params]).then(rowsOf),
    exec: async (sql) => void (await (client.query as Fn)(sql)),
    listen:
      typeof client.on === 'function'
        ? async (channel, onNotify) => {
            const onNotification = (message: { channel: string }) => message.channel === channel && onNotify();
            client.on('notification', onNotification);
            await client.query(`LISTEN ${channel}`);
            return async () => {
              client.off('notification', onNotification);
              await client.query(`UNLISTEN ${channel}`).catch(() => undefined);
            };
          }
        : undefined,
  };
}

function pglite(db: Loose): RelaySql {
  return {
    run: (sql, params) => (db.query as Fn)(sql, [...params]).then(rowsOf),
    exec: async (sql) => void (await (db.exec as Fn)(sql)),
    listen: async (channel, onNotify) => {
      const stop = await (db.listen as Fn)(channel, () => onNotify());
      return async () => {
        if (!db.closed) await stop();
      };
    },
  };
}

function typeOrmDataSource(dataSource: Loose): RelaySql {
  const withRunner = async <T>(work: (runner: Loose) => Promise<T>): Promise<T> => {
    const runner = (dataSource.createQueryRunner as Fn)();
    try {
      return await work(runner);
    } finally {
      await runner.release();
    }
  };
  return {
    run: (sql, params) => withRunner((runner) => runner.query(sql, [...params]).then(rowsOf)),
    exec: (sql) => withRunner(async (runner) => void (await runner.query(sql))),
  };
}
