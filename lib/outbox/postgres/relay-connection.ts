import type { SqlRunner } from './sql-executors.js';
import { rowsOf } from './sql-executors.js';

/** The relay's connection, reduced to what the store needs. Internal. */
export interface RelaySql {
  /** Names the connection in messages. */
  readonly description: string;
  readonly run: SqlRunner;
  /** Whether the application closed the connection (it cannot be used again), when that can be told. */
  readonly closed: () => boolean;
  /** Runs several statements at once (the migration). */
  readonly exec: (sql: string) => Promise<void>;
  /**
   * Where the database is looked for (`host:port`, a socket directory), when the connection says;
   * undefined for an in-process database.
   */
  readonly address: () => string | undefined;
  /** Whether a statement can be run now (a TypeORM DataSource may be initialized after bootstrap). */
  readonly canRun: () => boolean;
  /** LISTEN on `channel`, when the connection can; resolves to the function that stops it. */
  readonly listen?: (channel: string, onNotify: () => void, onError: (error: unknown) => void) => Promise<() => Promise<void>>;
}

// The drivers are optional peers, recognised by shape and never imported: their members are read loosely.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the driver's own signatures
type Fn = (...args: any[]) => any;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the driver's own members
type Loose = Record<string, any>;

/**
 * Recognises the relay's connection by its shape (no import of the drivers: they are optional
 * peers): a `pg` `Pool` or `Client`, a PGlite database, or a TypeORM `DataSource` (each statement on
 * a fresh query runner, so never inside a `typeorm-transactional` transaction of the caller).
 */
export function relaySqlOf(connection: object): RelaySql | undefined {
  const c = connection as Loose;
  if (typeof c.createQueryRunner === 'function') return typeOrmDataSource(c);
  if (typeof c.query !== 'function') return undefined;
  if (typeof c.listen === 'function' && typeof c.exec === 'function' && typeof c.transaction === 'function') return pglite(c);
  if (typeof c.connect === 'function' && 'totalCount' in c) return pgPool(c);
  return pgClient(c);
}

function pgPool(pool: Loose): RelaySql {
  return {
    description: 'pg Pool',
    address: () => pgAddress(pool.options as Loose | undefined),
    canRun: () => true,
    run: (sql, params) => (pool.query as Fn)(sql, [...params]).then(rowsOf),
    exec: async (sql) => void (await (pool.query as Fn)(sql)),
    closed: () => pool.ending === true || pool.ended === true,
    listen: async (channel, onNotify, onError) => {
      // LISTEN needs a session of its own. Not one of the pool's clients: a client checked out until
      // the relay stops would make the application's own pool.end() (in onModuleDestroy, which Nest
      // runs before the relay's shutdown hook) wait for it forever. A client built like the pool's.
      const PgClient = pool.Client as new (options: unknown) => Loose;
      const client = new PgClient(pool.options);
      let ended = false;
      const end = () => {
        if (ended) return Promise.resolve();
        ended = true;
        client.off('notification', onNotification);
        return (client.end as Fn)().catch(() => undefined);
      };
      const onNotification = (message: { channel: string }) => message.channel === channel && onNotify();
      // An error after end() (the server closing the session) is expected and not reported.
      client.on('error', (error: unknown) => {
        if (ended) return;
        void end();
        onError(error);
      });
      client.on('notification', onNotification);
      try {
        await client.connect();
        await client.query(`LISTEN ${channel}`);
      } catch (error) {
        await end();
        throw error;
      }
      return end;
    },
  };
}

function pgClient(client: Loose): RelaySql {
  return {
    description: 'pg Client',
    // pg's Client resolves host and port (options, connection string, PGHOST/PGPORT) when built.
    address: () => pgAddress({ host: client.host, port: client.port }),
    canRun: () => true,
    closed: () => false,
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
    description: 'PGlite database',
    address: () => undefined,
    canRun: () => true,
    closed: () => db.closed === true,
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
  let initialized = false;
  const withRunner = async <T>(work: (runner: Loose) => Promise<T>): Promise<T> => {
    const runner = (dataSource.createQueryRunner as Fn)();
    try {
      return await work(runner);
    } finally {
      await runner.release();
    }
  };
  return {
    description: 'TypeORM DataSource',
    address: () => pgAddress(dataSource.options as Loose | undefined),
    canRun: () => dataSource.isInitialized === true,
    // Closed once destroyed after having been initialized (it may initialize after the relay starts).
    closed: () => {
      if (dataSource.isInitialized === true) initialized = true;
      return initialized && dataSource.isInitialized === false;
    },
    run: (sql, params) => withRunner((runner) => runner.query(sql, [...params]).then(rowsOf)),
    exec: (sql) => withRunner(async (runner) => void (await runner.query(sql))),
  };
}

/**
 * `host:port` of `pg`-style connection options (`host`, `port`, or a `connectionString`/`url`), with
 * pg's defaults (PGHOST, PGPORT, localhost, 5432); a socket directory (a host starting with `/`) as
 * `<dir>/.s.PGSQL.<port>`. Never includes a user or password.
 */
export function pgAddress(options: Loose | undefined): string | undefined {
  const o = options ?? {};
  let host = typeof o.host === 'string' && o.host !== '' ? o.host : undefined;
  let port = o.port !== undefined && o.port !== null && o.port !== '' ? String(o.port) : undefined;
  const url = typeof o.connectionString === 'string' ? o.connectionString : typeof o.url === 'string' ? o.url : undefined;
  if (url !== undefined && (host === undefined || port === undefined)) {
    try {
      const parsed = new URL(url);
      host ??= parsed.hostname.replace(/^\[|\]$/g, '') || undefined;
      port ??= parsed.port || undefined;
    } catch {
      // Not a URL (a key=value string): fall back to the defaults below.
    }
  }
  host ??= process.env.PGHOST || 'localhost';
  port ??= process.env.PGPORT || '5432';
  return host.startsWith('/') ? `${host}/.s.PGSQL.${port}` : `${host.includes(':') ? `[${host}]` : host}:${port}`;
}
