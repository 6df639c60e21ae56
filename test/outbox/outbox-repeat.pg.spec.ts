import { jest } from '@jest/globals';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { holdsWithin, sleep, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { startOutboxApp, type OutboxApp, type RecordedRun } from './support/outbox-harness.js';
import { crashAfterCommit, startSurvivor, type CrashedWrite, useOutboxPostgres } from './support/outbox-postgres.js';

jest.setTimeout(180_000);

const TABLE = 'repeat_outbox';
const EVERY = 400;

failOnUnhandledRejections();

describe('repeat() and removeRepeat() through the outbox on PostgreSQL', () => {
  const pg = useOutboxPostgres(TABLE);

  const rowsOf = (topic: string) => pg.rowsOf(topic, 'job_id, kind');
  const scheduleIds = async (app: OutboxApp, topic: string) => (await app.queue.listRepeats(topic)).map((s) => s.id);
  const crash = async (target: { keyPrefix: string; topic: string }, write: CrashedWrite) => {
    const crashed = await crashAfterCommit(pg, { redisUrl: testRedisUrl(), ...target }, write);
    expect(crashed).toMatchObject({ signal: 'SIGKILL', output: expect.stringContaining(`COMMITTED ${write.mode} ${write.id}`) });
  };

  it('commit stores the schedule and its ticks run; rollback stores nothing', async () => {
    const topic = 'pg.repeat';
    const runs: RecordedRun[] = [];
    const app = await startOutboxApp({
      redis: testRedisUrl(),
      keyPrefix: uniquePrefix('outbox-repeat-pg'),
      outbox: pg.store(),
      topics: [topic],
      runs,
    });
    try {
      await pg.tx.run(() => app.queue.repeat(topic, { every: EVERY }, { id: 'kept' }));
      await expect(
        pg.tx.run(async () => {
          await app.queue.repeat(topic, { every: EVERY }, { id: 'dropped' });
          throw new Error('rollback');
        }),
      ).rejects.toThrow('rollback');
      expect(await scheduleIds(app, topic)).toEqual(['kept']);
      await waitFor(() => runs.length >= 3 || undefined, 60_000, 'three ticks');
      expect(runs.every((run) => run.id.startsWith('repeat:kept@'))).toBe(true);
      expect(new Set(runs.map((run) => run.id)).size).toBe(runs.length);
      expect(await rowsOf(topic)).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it(
    "a process SIGKILLed after COMMIT, before applying repeat(): another instance's relay stores it; " + 'then the same for removeRepeat()',
    async () => {
      const keyPrefix = uniquePrefix('outbox-repeat-crash');
      const topic = 'crash.repeat';
      await crash({ keyPrefix, topic }, { mode: 'repeat', id: 'nightly', every: EVERY });
      // Committed, and not in Redis: the row waits in the outbox.
      expect(await rowsOf(topic)).toEqual([{ job_id: 'nightly', kind: 'r' }]);

      const runs: RecordedRun[] = [];
      const survivor = await startSurvivor(pg, keyPrefix, topic, runs);
      try {
        await waitFor(
          async () => ((await scheduleIds(survivor, topic)).includes('nightly') ? true : undefined),
          60_000,
          'the relay to store the schedule',
        );
        await waitFor(() => runs.length >= 3 || undefined, 60_000, 'three ticks');
        expect(runs[0]).toMatchObject({ payload: { from: 'crashed' } });
        expect(new Set(runs.map((run) => run.id)).size).toBe(runs.length);
        await pg.noRowsOf(topic, 30_000, 'the row to be deleted');

        await crash({ keyPrefix, topic }, { mode: 'remove', id: 'nightly' });
        await waitFor(
          async () => ((await scheduleIds(survivor, topic)).length === 0 ? true : undefined),
          60_000,
          'the relay to remove the schedule',
        );
        await pg.noRowsOf(topic, 30_000, 'the removal row to be deleted');
        await sleep(2 * EVERY); // a tick claimed before the removal may still finish
        const settled = runs.length;
        expect(await holdsWithin(() => runs.length > settled, 4 * EVERY)).toBe(false);
        expect(survivor.queue.outboxStats).toMatchObject({ parked: 0 });
      } finally {
        await survivor.close();
      }
    },
  );
});
