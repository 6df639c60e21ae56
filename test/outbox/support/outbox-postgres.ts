import { redisOptionFor } from '../../support/test-driver.js';
import { Pool } from 'pg';
import { inPgTransaction, PostgresJobOutbox } from '../../../lib/outbox/postgres/index.js';
import { spawnFixture } from '../../support/child-process.js';
import { startLocalPostgres, type LocalPostgres } from '../../support/postgres.js';
import { testRedisUrl } from '../../support/test-app.js';
import { PgTransactions, startOutboxApp, type OutboxApp, type RecordedRun } from './outbox-harness.js';
import { waitFor } from '../../support/timing.js';
import { useResource } from '../../support/use-resource.js';

type StoreOptions = ConstructorParameters<typeof PostgresJobOutbox>[0];

/**
 * A spec file's PostgreSQL for the outbox: its own server, a `pg` pool on it, transactions on that
 * pool, and `PostgresJobOutbox` stores on one table. Start it in `beforeAll`, stop it in `afterAll`
 * after the apps that use its pool are closed.
 */
export interface OutboxPostgres {
  readonly server: LocalPostgres;
  readonly pool: Pool;
  readonly tx: PgTransactions;
  readonly table: string;
  /** A store on `table` whose transaction is `tx`'s current one, relaying through `pool`. */
  store(overrides?: Partial<StoreOptions>): PostgresJobOutbox;
  /** The `columns` (SQL, `job_id` unless given) of `table`'s rows of `topic`. */
  rowsOf(topic: string, columns?: string): Promise<Record<string, unknown>[]>;
  /** Resolves once `table` holds no row of `topic` (relayed and deleted), within `timeoutMs`. */
  noRowsOf(topic: string, timeoutMs: number, what: string): Promise<void>;
  /** Ends the pool, then stops the server and removes its data. */
  stop(): Promise<void>;
}

/** Starts PostgreSQL, opens a pool of `max` clients, and creates `table` unless `migrate` is false. */
export async function startOutboxPostgres(table: string, { migrate = true, max = 8 } = {}): Promise<OutboxPostgres> {
  const server = await startLocalPostgres();
  const pool = new Pool({ host: server.host, port: server.port, user: server.user, database: server.database, max });
  const tx = new PgTransactions(pool);
  const store = (overrides: Partial<StoreOptions> = {}) =>
    new PostgresJobOutbox({ transaction: inPgTransaction(tx.current), relay: pool, table, ...overrides });
  const rowsOf = async (topic: string, columns = 'job_id') =>
    (await pool.query(`SELECT ${columns} FROM ${table} WHERE topic = $1`, [topic])).rows;
  const noRowsOf = async (topic: string, timeoutMs: number, what: string) => {
    await waitFor(async () => (await rowsOf(topic)).length === 0, timeoutMs, what);
  };
  const stop = async () => {
    await pool.end();
    await server.stop();
  };
  try {
    if (migrate) await pool.query(store().migration);
  } catch (error) {
    await stop();
    throw error;
  }
  return { server, pool, tx, table, store, rowsOf, noRowsOf, stop };
}

/** What a crashed producer's transaction did through the outbox (test/fixtures/outbox-crash-after-commit.ts). */
export type CrashedWrite = { mode: 'schedule' | 'remove'; id: string } | { mode: 'repeat'; id: string; every: number };

/**
 * Runs a producer on `postgres`'s outbox table that commits `write` and is SIGKILLed right after
 * COMMIT, before its after-commit hook reached Redis. Resolves once it exited, with the signal that
 * ended it and its output (which says `COMMITTED <mode> <id>` once COMMIT returned).
 */
export async function crashAfterCommit(
  postgres: OutboxPostgres,
  target: { redisUrl: string; keyPrefix: string; topic: string },
  write: CrashedWrite,
): Promise<{ signal: NodeJS.Signals | null; output: string }> {
  const every = write.mode === 'repeat' ? [String(write.every)] : [];
  const child = spawnFixture('outbox-crash-after-commit.ts', [
    postgres.server.url,
    target.redisUrl,
    target.keyPrefix,
    postgres.table,
    target.topic,
    write.mode,
    write.id,
    ...every,
  ]);
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, s) => resolve(s)));
  return { signal, output: child.output() };
}

/**
 * The instance that outlives producers crashed after COMMIT: on the test Redis, it consumes `topic` into
 * `runs`, and its relay takes over the rows older than 1 s (the crashed producers' rows).
 */
export function startSurvivor(postgres: OutboxPostgres, keyPrefix: string, topic: string, runs: RecordedRun[]): Promise<OutboxApp> {
  return startOutboxApp({
    redis: redisOptionFor(testRedisUrl()),
    keyPrefix,
    outbox: postgres.store(),
    topics: [topic],
    runs,
    outboxRelay: { minAge: 1_000 },
  });
}

/** `startOutboxPostgres` for a describe block (`useResource`): started before its tests, stopped after them. */
export function useOutboxPostgres(table: string, options: Parameters<typeof startOutboxPostgres>[1] = {}): OutboxPostgres {
  return useResource(
    'the outbox database',
    () => startOutboxPostgres(table, options),
    (pg) => pg.stop(),
  );
}
