import { useRawRedis } from '../support/test-app.js';
import { useDelayApp } from './support/delay-test-app.js';
import { sleep, waitFor } from '../support/timing.js';

describe('Cancel and reschedule racing with consumers', () => {
  const t = useDelayApp();
  const other = useDelayApp(() => ({ keyPrefix: t.keyPrefix })); // a second "process" consuming the same topics
  const redis = useRawRedis();

  it('a job cancelled while waiting never runs; every other job runs exactly once', async () => {
    const starts = new Map<string, number>();
    const handler = async (_payload: unknown, job: { id: string }) => {
      starts.set(job.id, (starts.get(job.id) ?? 0) + 1);
      await sleep(Math.random() * 5);
    };
    const consumers = [
      t.queue.consume('race.cancel', handler, { concurrency: 8 }),
      other.queue.consume('race.cancel', handler, { concurrency: 8 }),
    ];
    const count = 200;
    const start = Date.now() + 100;
    const dueAt = new Map<string, number>();
    const ids = await t.queue.scheduleMany(
      'race.cancel',
      Array.from({ length: count }, (_, i) => {
        // Every fourth job is due well after the others: its cancel, sent at once, finds it waiting
        // however slow this machine is (so the case is never vacuous).
        const at = i % 4 === 0 ? start + 5_000 : start + Math.round(Math.random() * 300);
        dueAt.set(`c${i}`, at);
        return { payload: i, id: `c${i}`, at };
      }),
    );
    // Cancels land around the due times: some clearly before, some while the job is claimed or done.
    const cancels = new Map<string, { cancelled: boolean; resolvedAt: number }>();
    await Promise.all(
      ids
        .filter((_, i) => i % 2 === 0)
        .map(async (id, n) => {
          if (n % 2 === 1) await sleep(Math.max(0, dueAt.get(id)! - Date.now() - 60 + Math.random() * 120));
          const cancelled = await t.queue.cancel('race.cancel', id);
          cancels.set(id, { cancelled, resolvedAt: Date.now() });
        }),
    );
    await waitFor(
      async () => {
        const s = await t.queue.stats('race.cancel');
        return s.scheduled + s.due + s.active === 0;
      },
      10_000,
      'the topic to empty',
    );

    let cancelledWhileWaiting = 0;
    for (const id of ids) {
      const runs = starts.get(id) ?? 0;
      expect(runs).toBeLessThanOrEqual(1);
      const cancel = cancels.get(id);
      if (!cancel) {
        expect(runs).toBe(1);
      } else if (!cancel.cancelled) {
        expect(runs).toBe(1); // nothing left to cancel: it had already run and been acknowledged
      } else if (cancel.resolvedAt < dueAt.get(id)!) {
        // Removed before its due time (same host clock as Redis), so while it was still waiting.
        expect(runs).toBe(0);
        cancelledWhileWaiting++;
      }
      // Otherwise cancel won a job already claimed, or still waiting: it runs at most once (checked above).
    }
    expect(cancelledWhileWaiting).toBeGreaterThan(0);
    expect(await redis.hlen(`${t.keyPrefix}:dq:{race.cancel}:jobs`)).toBe(0);
    await Promise.all(consumers.map((c) => c.close()));
  });

  it('a rescheduled job runs once, at the new time if the move won, at the old time if a consumer took it first', async () => {
    const runs = new Map<string, Array<{ scheduledAt: number; startedAt: number }>>();
    const handler = (_payload: unknown, job: { id: string; scheduledAt: Date }) => {
      runs.set(job.id, [...(runs.get(job.id) ?? []), { scheduledAt: job.scheduledAt.getTime(), startedAt: Date.now() }]);
    };
    const consumers = [
      t.queue.consume('race.move', handler, { concurrency: 4 }),
      other.queue.consume('race.move', handler, { concurrency: 4 }),
    ];
    const at = Date.now() + 300;
    const later = at + 600;
    const ids = await t.queue.scheduleMany(
      'race.move',
      Array.from({ length: 100 }, (_, i) => ({ payload: i, id: `m${i}`, at })),
    );
    const moved = new Map<string, boolean>();
    await Promise.all(
      ids.map(async (id) => {
        await sleep(Math.max(0, at - Date.now() - 20 + Math.random() * 40));
        moved.set(id, await t.queue.reschedule('race.move', id, { at: later }));
      }),
    );
    await waitFor(() => runs.size === ids.length, 10_000, 'every job to run');
    await sleep(200);
    for (const id of ids) {
      const [run, ...extra] = runs.get(id)!;
      expect(extra).toHaveLength(0);
      const expected = moved.get(id) ? later : at;
      expect(run.scheduledAt).toBe(expected);
      expect(run.startedAt).toBeGreaterThanOrEqual(expected);
    }
    await Promise.all(consumers.map((c) => c.close()));
  });
});
