import type { DelayQueueService, JobContext } from '../../lib/index.js';
import { uniquePrefix } from '../support/test-app.js';
import { useDelayInstances, type DelayInstances } from './support/delay-instances.js';
import { deferred, waitFor } from '../support/timing.js';

/**
 * Groups: "The jobs of one group start one at a time across all instances …
 * A job of a group is not claimed while another job of its group runs … A running job that is
 * cancelled or replaced keeps its group's turn until its handler has returned" (docs/delayed-jobs.md, Groups).
 *
 * Each test records, per group, which handlers are inside their handler function at once.
 */
class Running {
  private readonly inside = new Map<string, Set<string>>();
  readonly overlaps: string[] = [];

  enter(group: string, who: string): void {
    const set = this.inside.get(group) ?? new Set<string>();
    this.inside.set(group, set);
    if (set.size > 0) this.overlaps.push(`${who} started while ${[...set].join(', ')} still ran`);
    set.add(who);
  }

  leave(group: string, who: string): void {
    this.inside.get(group)?.delete(who);
  }
}

describe("A running job of a group that is cancelled or replaced keeps its group's turn", () => {
  const instances = useDelayInstances('rvg');

  async function instance(options: Parameters<DelayInstances['start']>[1] = {}): Promise<DelayQueueService> {
    return (await instances.start(1, options))[0].queue;
  }

  it('replace: true of a running job: the next job of its group waits until the old delivery has returned', async () => {
    // A well-behaved handler: it stops as soon as its signal aborts.
    const queue = await instance({ delayQueue: { visibilityTimeout: 3000 } });
    const running = new Running();
    const started: string[] = [];
    queue.consume<string>(
      'rv.replace',
      async (payload, job: JobContext) => {
        const who = `${payload}#${job.attempt}`;
        running.enter('g', who);
        started.push(who);
        if (payload === 'A-v1') {
          await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve(), { once: true }));
        } else {
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        running.leave('g', who);
      },
      { concurrency: 4 },
    );
    await queue.schedule('rv.replace', 'A-v1', { group: 'g', id: 'A' });
    await queue.schedule('rv.replace', 'B', { group: 'g', id: 'B' });
    await waitFor(() => started.includes('A-v1#1'), 5_000, 'A to start');
    // A new version of A, due later: the group's head is now B.
    await queue.schedule('rv.replace', 'A-v2', { group: 'g', id: 'A', replace: true, delay: 60_000 });
    await waitFor(() => started.includes('B#1'), 5_000, 'B to start');
    // A's signal aborts at its next visibility extension; B waits for A's handler to return.
    expect(running.overlaps).toEqual([]);
  });

  it('cancel() of a running job: the next job of its group waits until the cancelled handler has returned', async () => {
    const queue = await instance();
    const running = new Running();
    const started: string[] = [];
    const cleanupDone = deferred();
    queue.consume<string>(
      'rv.cancel',
      async (payload, job: JobContext) => {
        running.enter('g', payload);
        started.push(payload);
        if (payload === 'A') {
          await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve(), { once: true }));
          // Stops at the signal, as the docs ask, but needs a moment to wind down (closing a file, a
          // rollback): the handler is still running.
          await new Promise((resolve) => setTimeout(resolve, 300));
          cleanupDone.resolve();
        }
        running.leave('g', payload);
      },
      { concurrency: 4 },
    );
    await queue.schedule('rv.cancel', 'A', { group: 'g', id: 'A' });
    await queue.schedule('rv.cancel', 'B', { group: 'g', id: 'B' });
    await waitFor(() => started.includes('A'), 5_000, 'A to start');
    expect(await queue.cancel('rv.cancel', 'A')).toBe(true);
    await cleanupDone.promise;
    await waitFor(() => started.includes('B'), 5_000, 'B to start');
    expect(running.overlaps).toEqual([]);
  });

  it('releases a held turn when the cancelled delivery never reports back, at its claim\'s deadline and not before', async () => {
    const keyPrefix = uniquePrefix('rvg');
    const queue = await instance({ keyPrefix, delayQueue: { visibilityTimeout: 900, shutdownTimeout: 200 } });
    const claimed = new Map<string, number>();
    queue.consume<string>('rv.stuck', async (payload, job) => {
      claimed.set(payload, job.claimedAt.getTime());
      // Ignores its signal: it never returns, so its consumer never reports the turn back.
      if (payload === 'A') await new Promise(() => undefined);
    }, { concurrency: 4 });
    await queue.scheduleMany('rv.stuck', [{ payload: 'A', group: 'g', id: 'A' }, { payload: 'B', group: 'g', id: 'B' }]);
    await waitFor(() => claimed.has('A'), 5_000, 'A to start');
    await queue.cancel('rv.stuck', 'A');
    const held = `${keyPrefix}:dq:{rv.stuck}:groups-held`;
    const [member, deadline] = await instances.redis().zrange(held, '0', '0', 'WITHSCORES');
    expect(member).toMatch(/^\d+$/);
    await waitFor(() => claimed.has('B'), 10_000, 'B once the held turn expired');
    expect(claimed.get('B')!).toBeGreaterThanOrEqual(Number(deadline));
    expect(await instances.redis().exists(held)).toBe(0);
  });
});
