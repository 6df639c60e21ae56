import { redisOptionFor } from '../../support/test-driver.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { runInTransaction } from '../../../lib/index.js';
import { inPgTransaction, PostgresJobOutbox } from '../../../lib/outbox/postgres/index.js';
import { testRedisUrl, uniquePrefix } from '../../support/test-app.js';
import { readThrough } from '../../support/use-resource.js';
import { startOutboxApp, type OutboxApp, type RecordedRun } from './outbox-harness.js';

/** An in-process PGlite database and an outbox app writing its outbox rows in that database's transactions. */
export interface PgliteOutbox {
  /** The database, read through (`readThrough`). */
  readonly db: PGlite;
  /** The app (relay `minAge` 200 ms) consuming the given topics into `runs`, read through. */
  readonly app: OutboxApp;
  readonly runs: RecordedRun[];
  /** Runs `work` in a database transaction inside the library's unit of work: the outbox writes in it, hooks run after COMMIT. */
  inTx<T>(work: (tx: Transaction) => Promise<T>): Promise<T>;
  /** A store on the default outbox table whose transaction is `inTx`'s current one. */
  newStore(): PostgresJobOutbox;
}

/**
 * Opens PGlite, runs `setupSql` (the application's own tables) and starts the app before a describe
 * block's tests (its store applies the outbox migration at start); closes the app, then the database, after them.
 */
export function usePgliteOutbox(label: string, setupSql: string, topics: string[]): PgliteOutbox {
  const current = new AsyncLocalStorage<Transaction>();
  const runs: RecordedRun[] = [];
  let started: { db: PGlite; app?: OutboxApp } | undefined;
  beforeAll(async () => {
    started = { db: new PGlite() };
    const { db } = started;
    await db.exec(setupSql);
    started.app = await startOutboxApp({
      redis: redisOptionFor(testRedisUrl()),
      keyPrefix: uniquePrefix(label),
      outbox: new PostgresJobOutbox({ transaction: inPgTransaction(() => current.getStore()), relay: db, applyMigrationAtStart: true }),
      topics,
      runs,
      outboxRelay: { minAge: 200 },
    });
  });
  afterAll(async () => {
    await started?.app?.close();
    await started?.db.close();
  });
  const db = readThrough('the PGlite database', () => started?.db);
  return {
    db,
    app: readThrough('the outbox app', () => started?.app),
    runs,
    inTx: (work) => runInTransaction(() => db.transaction((tx) => current.run(tx, () => work(tx)))),
    newStore: () => new PostgresJobOutbox({ transaction: inPgTransaction(() => current.getStore()), relay: db }),
  };
}
