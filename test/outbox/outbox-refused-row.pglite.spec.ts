import { jest } from '@jest/globals';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { AsyncLocalStorage } from 'node:async_hooks';
import { runInTransaction } from '../../lib/index.js';
import { inPgTransaction, PostgresJobOutbox } from '../../lib/outbox/postgres/index.js';
import { rawRedis, testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { holdsWithin, waitFor } from '../support/timing.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { startOutboxApp, type OutboxApp } from './support/outbox-harness.js';

jest.setTimeout(120_000);
afterEach(() => jest.restoreAllMocks());

failOnUnhandledRejections();

describe('an outbox row Redis always refuses (PGlite)', () => {
  let db: PGlite;
  let app: OutboxApp;
  const current = new AsyncLocalStorage<Transaction>();
  const keyPrefix = uniquePrefix('outbox-refused');
  const redis = rawRedis();

  beforeAll(async () => {
    db = new PGlite();
    app = await startOutboxApp({
      redis: testRedisUrl(),
      keyPrefix,
      outbox: new PostgresJobOutbox({ transaction: inPgTransaction(() => current.getStore()), relay: db, applyMigrationAtStart: true }),
      outboxRelay: { minAge: 200, pollInterval: 100 },
    });
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
    redis.disconnect();
  });

  it(
    'is parked after the bounded number of refusals (WRONGTYPE on the topic key), with an outbox.row.parked ' +
      'event, and no longer claimed',
    async () => {
      muteNestLogger('error', 'warn');
      const topic = 'refused.topic';
      // The topic's jobs hash is a string: every write of the topic's jobs gets WRONGTYPE.
      await redis.set(`${keyPrefix}:dq:{${topic}}:jobs`, 'not a hash');
      await runInTransaction(() => db.transaction((tx) => current.run(tx, () => app.queue.schedule(topic, { n: 1 }, { id: 'refused' }))));

      const parked = await waitFor(
        async () =>
          (
            await db.query<{ parked_at: Date | null; last_error: string | null; attempts: number }>(
              'SELECT parked_at, last_error, attempts FROM redis_lock_job_outbox',
            )
          ).rows.find((row) => row.parked_at),
        60_000,
        'the refused row to be parked',
      );
      expect(parked.last_error).toContain('WRONGTYPE');
      expect(app.seen.filter((e) => e.name === 'outbox.row.parked').map((e) => e.event)).toEqual([
        expect.objectContaining({ topic, jobId: 'refused', reason: expect.stringContaining('WRONGTYPE') }),
      ]);
      expect(app.queue.outboxStats).toMatchObject({ parked: 1 });
      // Parked rows are not claimed again: no further failed looks once it is parked.
      const failedLooks = app.seen.filter((e) => e.name === 'outbox.relay.failed').length;
      const attempts = parked.attempts;
      expect(await holdsWithin(() => app.seen.filter((e) => e.name === 'outbox.relay.failed').length > failedLooks, 2_000)).toBe(false);
      expect((await db.query<{ attempts: number }>('SELECT attempts FROM redis_lock_job_outbox')).rows).toEqual([{ attempts }]);
    },
  );
});
