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

  it(
    'cancel() of a running job whose handler ignores its signal for longer than the visibility timeout: ' +
      'the next job of its group waits until it has returned',
    async () => {
      // Visibility 1.5 s; A's handler keeps working 3.5 s without looking at its signal. While it
      // runs on a live, connected instance its group's turn stays held (its consumer keeps extending it).
      const queue = await instance({ delayQueue: { visibilityTimeout: 1_500 } });
      const running = new Running();
      const started: string[] = [];
      const aReturned = deferred();
      queue.consume<string>(
        'rv.ignores',
        async (payload) => {
          running.enter('g', payload);
          started.push(payload);
          if (payload === 'A') await new Promise((resolve) => setTimeout(resolve, 3_500));
          running.leave('g', payload);
          if (payload === 'A') aReturned.resolve();
        },
        { concurrency: 4 },
      );
      await queue.scheduleMany('rv.ignores', [
        { payload: 'A', group: 'g', id: 'A' },
        { payload: 'B', group: 'g', id: 'B' },
      ]);
      await waitFor(() => started.includes('A'), 5_000, 'A to start');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await queue.cancel('rv.ignores', 'A')).toBe(true);
      await aReturned.promise;
      await waitFor(() => started.includes('B'), 10_000, 'B to start once A returned');
      expect(running.overlaps).toEqual([]);
    },
  );

  it(
    "cancel() of a claimed job still waiting in a consumer's buffer: the next job of its group starts " +
      "at once, not at the claim's deadline",
    async () => {
      const [a, b] = await instances.start(2);
      const release = deferred();
      const started: string[] = [];
      // Short jobs first, so that `a` claims ahead of its two slots (prefetch); then L1 and L2, which
      // run until released, and G1 one millisecond later: claimed into `a`'s buffer, not started.
      const at = Date.now() + 500;
      const short = Array.from({ length: 10 }, (_, i) => ({ payload: `S${i}`, at }));
      a.queue.consume<string>(
        'rv.buffered',
        async (payload) => {
          started.push(`${payload}@a`);
          if (payload.startsWith('L')) await release.promise;
        },
        { concurrency: 2 },
      );
      await a.queue.scheduleMany('rv.buffered', [
        ...short,
        { payload: 'L1', at },
        { payload: 'L2', at },
        { payload: 'G1', group: 'g', id: 'G1', at: at + 1 },
        { payload: 'G2', group: 'g', id: 'G2', at: at + 1 },
      ]);
      await waitFor(
        async () =>
          (started.includes('L1@a') && started.includes('L2@a') && (await a.queue.stats('rv.buffered')).active === 3) || undefined,
        10_000,
        'L1 and L2 to run and G1 to wait in the buffer',
      );
      expect(await a.queue.cancel('rv.buffered', 'G1')).toBe(true);
      const cancelledAt = performance.now();
      b.queue.consume<string>('rv.buffered', (payload) => void started.push(`${payload}@b`));
      // Before the fix: G1's held turn kept G2 waiting for G1's claim deadline (visibilityTimeout,
      // 30 s); and the wake-up of its release, taken by `a` (no free slot), was not passed on to `b`
      // (parked until its maxIdleWait, 10 s).
      await waitFor(() => started.includes('G2@b') || undefined, 8_000, 'G2 to start on the idle instance');
      expect(performance.now() - cancelledAt).toBeLessThan(8_000);
      expect(started.filter((s) => s.startsWith('G1'))).toEqual([]);
      release.resolve();
    },
  );

  it(
    "releases a held turn when the cancelled delivery's instance goes away without reporting back, at " +
      "the turn's deadline and not before",
    async () => {
      const keyPrefix = uniquePrefix('rvg');
      const options = { keyPrefix, delayQueue: { visibilityTimeout: 900, shutdownTimeout: 200 } };
      const [gone] = await instances.start(1, options);
      const claimed = new Map<string, number>();
      gone.queue.consume<string>(
        'rv.stuck',
        async (payload, job) => {
          claimed.set(payload, job.claimedAt.getTime());
          // Ignores its signal: it never returns, so its instance never reports the turn back.
          if (payload === 'A') await new Promise(() => undefined);
        },
        { concurrency: 4 },
      );
      await gone.queue.scheduleMany('rv.stuck', [
        { payload: 'A', group: 'g', id: 'A' },
        { payload: 'B', group: 'g', id: 'B' },
      ]);
      await waitFor(() => claimed.has('A'), 5_000, 'A to start');
      await gone.queue.cancel('rv.stuck', 'A');
      // While its instance runs, the turn is kept (extended); once it has stopped, the deadline stands.
      await gone.close();
      const held = `${keyPrefix}:dq:{rv.stuck}:groups-held`;
      const [member, deadline] = await instances.redis().zrange(held, '0', '0', 'WITHSCORES');
      expect(member).toMatch(/^\d+$/);
      const [other] = await instances.start(1, options);
      other.queue.consume<string>('rv.stuck', (payload, job) => void claimed.set(payload, job.claimedAt.getTime()), { concurrency: 4 });
      await waitFor(() => claimed.has('B'), 10_000, 'B once the held turn expired');
      expect(claimed.get('B')!).toBeGreaterThanOrEqual(Number(deadline));
      expect(await instances.redis().exists(held)).toBe(0);
    },
  );
});
