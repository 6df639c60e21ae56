import { jest } from '@jest/globals';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { holdsWithin, waitFor } from '../support/timing.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';
import { checkExactlyOnce, startOutboxApp, type RecordedRun } from './support/outbox-harness.js';
import { crashAfterCommit, startSurvivor, useOutboxPostgres } from './support/outbox-postgres.js';

jest.setTimeout(180_000);
afterEach(() => jest.restoreAllMocks());

const TABLE = 'failures_outbox';

failOnUnhandledRejections();

describe('transactional outbox under failure (PostgreSQL)', () => {
  const pg = useOutboxPostgres(TABLE);

  it('a process SIGKILLed right after COMMIT, before its relay: another instance delivers the job once', async () => {
    const keyPrefix = uniquePrefix('outbox-crash');
    const topic = 'order.expire';
    const ids = ['order-1', 'order-2', 'order-3'];
    // Three producers at once, each killed right after its COMMIT.
    await Promise.all(
      ids.map(async (id) => {
        const crashed = await crashAfterCommit(pg, { redisUrl: testRedisUrl(), keyPrefix, topic }, { mode: 'schedule', id });
        expect(crashed).toMatchObject({ signal: 'SIGKILL', output: expect.stringContaining(`COMMITTED schedule ${id}`) });
      }),
    );
    // Committed, and not in Redis: the rows wait in the outbox.
    expect((await pg.rowsOf(topic)).map((row) => row.job_id).sort()).toEqual(ids);
    const runs: RecordedRun[] = [];
    const survivor = await startSurvivor(pg, keyPrefix, topic, runs);
    try {
      await waitFor(() => runs.length >= ids.length || undefined, 60_000, "the crashed instances' jobs");
      expect(await holdsWithin(() => runs.length === ids.length, 1_500)).toBe(true);
      expect(checkExactlyOnce(runs, ids)).toEqual({ duplicated: [], missing: [] });
      expect(await pg.rowsOf(topic)).toEqual([]);
    } finally {
      await survivor.close();
    }
  });

  describe('with Redis down for 12 s around COMMIT', () => {
    const redis = useLocalRedisServer();

    it(
      'jobs committed during the outage are delivered once when Redis returns: overdue ones at once, later ' + 'ones at their due time',
      async () => {
        muteNestLogger('error', 'warn');
        const topic = 'outage';
        const runs: RecordedRun[] = [];
        const app = await startOutboxApp({
          redis: redis.url,
          keyPrefix: uniquePrefix('outage'),
          outbox: pg.store(),
          topics: [topic],
          runs,
          outboxRelay: { minAge: 500 },
        });
        try {
          // Down until the transaction has committed both rows.
          let bringBack!: () => void;
          const restarted = redis.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
          await waitFor(() => redis.process.signalCode !== null, 10_000, 'redis-server to be killed');
          const scheduledAt = Date.now();
          const ids = await pg.tx.run(async () => [
            await app.queue.schedule(topic, 'now', { id: 'due-now' }),
            await app.queue.schedule(topic, 'in 20 s', { id: 'due-later', delay: 20_000 }),
          ]);
          const committedIn = Date.now() - scheduledAt;
          expect(committedIn).toBeLessThan(10_000); // the outage does not hold the transaction's caller
          expect((await pg.rowsOf(topic)).length).toBe(2);
          bringBack();
          await restarted;
          const back = Date.now();
          await waitFor(() => runs.some((run) => run.id === 'due-now') || undefined, 60_000, 'the overdue job after the outage');
          const nowRun = runs.find((run) => run.id === 'due-now')!;
          expect(nowRun.at - back).toBeLessThan(15_000);
          await waitFor(() => runs.some((run) => run.id === 'due-later') || undefined, 60_000, 'the later job');
          const laterRun = runs.find((run) => run.id === 'due-later')!;
          expect(laterRun.at - scheduledAt).toBeGreaterThanOrEqual(19_500);
          expect(await holdsWithin(() => runs.length === 2, 1_500)).toBe(true);
          expect(checkExactlyOnce(runs, ids)).toEqual({ duplicated: [], missing: [] });
          await pg.noRowsOf(topic, 30_000, 'the rows to be deleted');
        } finally {
          await app.close();
        }
      },
    );
  });
});
