import { jest } from '@jest/globals';
import { inPgTransaction, PostgresJobOutbox } from '../../lib/outbox/postgres/index.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { holdsWithin, sleep, waitFor } from '../support/timing.js';
import { startOutboxApp, type RecordedRun } from './support/outbox-harness.js';
import { usePgliteOutbox } from './support/pglite-outbox.js';

jest.setTimeout(180_000);
afterEach(() => jest.restoreAllMocks());

const EVERY = 400;

/** Tick job ids delivered more than once (each tick must run once). */
const repeatedTicks = (runs: readonly RecordedRun[]) => {
  const seen = new Set<string>();
  return runs.filter((run) => (seen.has(run.id) ? true : (seen.add(run.id), false))).map((run) => run.id);
};

describe('repeat() and removeRepeat() inside a transaction, through the outbox (PGlite)', () => {
  const topic = 'report.tick';
  const { db, app, runs, inTx, newStore } = usePgliteOutbox('pglite-outbox-repeat', 'CREATE TABLE reports (ref text PRIMARY KEY)', [topic]);
  const outboxCount = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM redis_lock_job_outbox')).rows[0].n;
  /** Another instance on `outbox` whose relay takes rows over at once; it consumes `topic` into `runs`. */
  const startEagerRelay = (label: string, outbox: PostgresJobOutbox, topic: string, runs: RecordedRun[] = []) =>
    startOutboxApp({
      redis: testRedisUrl(),
      keyPrefix: uniquePrefix(label),
      outbox,
      topics: [topic],
      runs,
      outboxRelay: { minAge: 0, pollInterval: 50 },
    });
  const runsOf = (id: string) => runs.filter((run) => run.id.startsWith(`repeat:${id}@`));

  it(
    'a committed repeat() stores the schedule after COMMIT and its ticks run; the result is the definition ' + 'with an estimated next run',
    async () => {
      const before = Date.now();
      const info = await inTx(async (tx) => {
        await tx.query('INSERT INTO reports (ref) VALUES ($1)', ['committed']);
        const result = await app.queue.repeat(topic, { every: EVERY }, { id: 'committed', payload: { ref: 'committed' } });
        // Nothing in Redis before COMMIT.
        expect((await app.queue.listRepeats(topic)).map((s) => s.id)).not.toContain('committed');
        return result;
      });
      expect(info).toMatchObject({ topic, id: 'committed', schedule: { every: EVERY }, catchUp: 'latest', pending: true });
      expect(info.lastRunAt).toBeUndefined();
      expect(info.nextRunAt.getTime()).toBeGreaterThan(before);
      // The after-commit application is done when the transaction's caller goes on; what Redis stored is not pending.
      const stored = (await app.queue.listRepeats(topic)).find((s) => s.id === 'committed');
      expect(stored).toBeDefined();
      expect(stored!.pending).toBeUndefined();
      await waitFor(() => runsOf('committed').length >= 3 || undefined, 60_000, 'three ticks of the committed schedule');
      expect(runsOf('committed')[0].payload).toEqual({ ref: 'committed' });
      expect(repeatedTicks(runsOf('committed'))).toEqual([]);
      expect(await outboxCount()).toBe(0);
    },
  );

  it('a rolled-back repeat() stores nothing and no tick runs', async () => {
    await expect(
      inTx(async (tx) => {
        await tx.query('INSERT INTO reports (ref) VALUES ($1)', ['rolled-back']);
        await app.queue.repeat(topic, { every: EVERY }, { id: 'rolled-back' });
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    const appeared = async () =>
      runsOf('rolled-back').length > 0 || (await app.queue.listRepeats(topic)).some((s) => s.id === 'rolled-back');
    expect(await holdsWithin(appeared, 4 * EVERY, { every: 50 })).toBe(false);
    expect(await outboxCount()).toBe(0);
  });

  it(
    'removeRepeat() in a committed transaction removes the schedule after COMMIT and its ticks stop; ' + 'a rolled-back one keeps it',
    async () => {
      await app.queue.repeat(topic, { every: EVERY }, { id: 'removed' });
      await waitFor(() => runsOf('removed').length >= 1 || undefined, 60_000, 'a first tick');
      await expect(
        inTx(async () => {
          await app.queue.removeRepeat(topic, 'removed');
          throw new Error('rollback');
        }),
      ).rejects.toThrow('rollback');
      expect((await app.queue.listRepeats(topic)).map((s) => s.id)).toContain('removed');

      const answer = await inTx(async () => {
        const removed = await app.queue.removeRepeat(topic, 'removed');
        expect((await app.queue.listRepeats(topic)).map((s) => s.id)).toContain('removed'); // not before COMMIT
        return removed;
      });
      expect(answer).toBe(true);
      expect((await app.queue.listRepeats(topic)).map((s) => s.id)).not.toContain('removed');
      // A tick claimed just before the removal may still finish; none after it.
      await sleep(2 * EVERY);
      const settled = runsOf('removed').length;
      expect(await holdsWithin(() => runsOf('removed').length > settled, 4 * EVERY)).toBe(false);
      expect(await outboxCount()).toBe(0);
    },
  );

  it('repeat() then removeRepeat() in one transaction ends removed; removeRepeat() then repeat() ends stored', async () => {
    await inTx(async () => {
      await app.queue.repeat(topic, { every: EVERY }, { id: 'added-then-removed' });
      await app.queue.removeRepeat(topic, 'added-then-removed');
    });
    await app.queue.repeat(topic, { every: EVERY }, { id: 'removed-then-added' });
    await inTx(async () => {
      await app.queue.removeRepeat(topic, 'removed-then-added');
      await app.queue.repeat(topic, { every: 2 * EVERY }, { id: 'removed-then-added' });
    });
    const ids = (await app.queue.listRepeats(topic)).map((s) => s.id);
    expect(ids).not.toContain('added-then-removed');
    expect((await app.queue.listRepeats(topic)).find((s) => s.id === 'removed-then-added')?.schedule).toEqual({ every: 2 * EVERY });
    await app.queue.removeRepeat(topic, 'removed-then-added');
  });

  it('a schedule row left behind is applied by the relay; one whose definition cannot be read is parked', async () => {
    muteNestLogger('error');
    const stored = await inTx(async (tx) => {
      await app.queue.repeat(topic, { every: EVERY }, { id: 'template' });
      return (await tx.query<{ body: string }>(`SELECT body FROM redis_lock_job_outbox WHERE job_id = 'template'`)).rows[0].body;
    });
    await app.queue.removeRepeat(topic, 'template');
    await db.transaction(async (tx) => {
      await new PostgresJobOutbox({ transaction: inPgTransaction(() => tx), relay: db }).insert([
        { rowId: 'left-r', topic, jobId: 'left-behind', kind: 'repeat', when: 0, replace: false, body: stored },
        { rowId: 'bad-r', topic, jobId: 'unreadable', kind: 'repeat', when: 0, replace: false, body: 'not a definition' },
      ]);
    });
    await waitFor(
      async () => ((await app.queue.listRepeats(topic)).some((s) => s.id === 'left-behind') ? true : undefined),
      30_000,
      'the left-behind row',
    );
    await waitFor(() => runsOf('left-behind').length >= 1 || undefined, 30_000, 'a tick of the relayed schedule');
    const parked = (
      await db.query<{ id: string; last_error: string }>('SELECT id, last_error FROM redis_lock_job_outbox WHERE parked_at IS NOT NULL')
    ).rows;
    expect(parked).toEqual([{ id: 'bad-r', last_error: expect.stringContaining('repeat schedule definition cannot be read') }]);
    expect((await app.queue.listRepeats(topic)).map((s) => s.id)).not.toContain('unreadable');
    await db.query(`DELETE FROM redis_lock_job_outbox WHERE id = 'bad-r'`);
    await app.queue.removeRepeat(topic, 'left-behind');
  });

  it(
    'a schedule row applied twice (after COMMIT, then by the relay after a failed DELETE) is one schedule ' + 'whose ticks run once',
    async () => {
      muteNestLogger('error');
      const store = newStore();
      let deletes = 0;
      const flaky = Object.assign(Object.create(store) as PostgresJobOutbox, {
        delete: async (ids: readonly string[]) => {
          if (deletes++ === 0) throw new Error('connection lost before DELETE');
          return store.delete(ids);
        },
      });
      const twiceRuns: RecordedRun[] = [];
      const twiceTopic = 'report.twice';
      const other = await startEagerRelay('pglite-outbox-repeat-twice', flaky, twiceTopic, twiceRuns);
      try {
        await inTx(() => other.queue.repeat(twiceTopic, { every: EVERY }, { id: 'twice' }));
        await waitFor(
          async () => (deletes >= 2 && (await outboxCount()) === 0 ? true : undefined),
          30_000,
          'the row to be applied again and deleted',
        );
        await waitFor(() => twiceRuns.length >= 4 || undefined, 60_000, 'four ticks');
        expect((await other.queue.listRepeats(twiceTopic)).map((s) => s.id)).toEqual(['twice']);
        expect(repeatedTicks(twiceRuns)).toEqual([]);
        // Ticks a schedule period apart, not two interleaved series.
        const ticks = twiceRuns.map((run) => Number(run.id.split('@')[1])).sort((a, b) => a - b);
        for (let i = 1; i < ticks.length; i++) expect(ticks[i] - ticks[i - 1]).toBeGreaterThanOrEqual(EVERY);
        expect(other.queue.outboxStats?.parked ?? 0).toBe(0);
      } finally {
        await other.close();
      }
    },
  );
  it(
    'a removeRepeat() outside a transaction deletes the changes of that schedule left in the outbox, ' +
      'so Redis losing its data cannot bring it back',
    async () => {
      const store = newStore();
      // A process killed after applying its row, before the row's DELETE: the row stays, claimed.
      let deletes = 0;
      const killedBeforeDelete = Object.assign(Object.create(store) as PostgresJobOutbox, {
        delete: async (ids: readonly string[]) => (deletes++ === 0 ? undefined : store.delete(ids)),
      });
      const leftTopic = 'report.left';
      const other = await startEagerRelay('pglite-outbox-repeat-left', killedBeforeDelete, leftTopic);
      const rowsOf = async (id: string) =>
        (
          await db.query<{ n: number }>('SELECT count(*)::int AS n FROM redis_lock_job_outbox WHERE topic = $1 AND job_id = $2', [
            leftTopic,
            id,
          ])
        ).rows[0].n;
      try {
        await inTx(() => other.queue.repeat(leftTopic, { every: 60_000 }, { id: 'left' }));
        await waitFor(async () => (await other.queue.listRepeats(leftTopic)).length === 1 || undefined, 30_000, 'the schedule applied');
        expect(await rowsOf('left')).toBe(1);

        expect(await other.queue.removeRepeat(leftTopic, 'left')).toBe(true);
        // The removal supersedes the row: without deleting it, its claim would run out, and after a
        // loss of Redis's data (the removal's record with it) the relay would store the schedule again.
        expect(await rowsOf('left')).toBe(0);
        expect(await other.queue.listRepeats(leftTopic)).toEqual([]);
      } finally {
        await other.close();
      }
    },
  );
});
