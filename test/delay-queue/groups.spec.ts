import { InvalidJobError, InvalidOptionsError, type DelayQueueService, type JobContext } from '../../lib/index.js';
import { useDelayInstances, type DelayInstances } from './support/delay-instances.js';
import { deferred, waitFor } from '../support/timing.js';

/** What handlers saw, per group: starts and ends in the order they happened, checked for overlap and order. */
class GroupLog {
  readonly starts: Array<{ group: string; seq: number }> = [];
  private readonly running = new Map<string, number>();
  readonly overlaps: string[] = [];
  maxGroupsAtOnce = 0;
  maxPerGroup = 0;

  start(group: string, seq: number): void {
    const now = (this.running.get(group) ?? 0) + 1;
    this.running.set(group, now);
    this.maxPerGroup = Math.max(this.maxPerGroup, now);
    if (now > this.limit) this.overlaps.push(`${group}#${seq}`);
    this.starts.push({ group, seq });
    this.maxGroupsAtOnce = Math.max(this.maxGroupsAtOnce, [...this.running.values()].filter((n) => n > 0).length);
  }

  end(group: string): void {
    this.running.set(group, (this.running.get(group) ?? 1) - 1);
  }

  constructor(private readonly limit = 1) {}

  /** The sequence numbers of `group` in the order they started. */
  order(group: string): number[] {
    return this.starts.filter((s) => s.group === group).map((s) => s.seq);
  }
}

describe('DelayQueueService: groups', () => {
  const instances = useDelayInstances('grp');

  async function start(n: number, options: Parameters<DelayInstances['start']>[1] = {}): Promise<DelayQueueService[]> {
    return (await instances.start(n, options)).map((t) => t.queue);
  }

  it('runs the jobs of one group one at a time and in order across three instances, groups in parallel', async () => {
    const queues = await start(3);
    const log = new GroupLog();
    const handler = async ({ group, seq }: { group: string; seq: number }) => {
      log.start(group, seq);
      await new Promise((resolve) => setTimeout(resolve, 2));
      log.end(group);
    };
    for (const q of queues) q.consume('g.order', handler, { concurrency: 4 });
    const groups = Array.from({ length: 8 }, (_, g) => `order:${g}`);
    const jobs = groups.flatMap((group) => Array.from({ length: 10 }, (_, seq) => ({ payload: { group, seq }, group })));
    // Interleaved across groups, half in one batch and half one by one (separate script calls).
    await queues[0].scheduleMany(
      'g.order',
      jobs.filter((j) => j.payload.seq < 5),
    );
    for (const job of jobs.filter((j) => j.payload.seq >= 5)) await queues[1].schedule('g.order', job.payload, { group: job.group });
    await waitFor(() => log.starts.length === jobs.length, 20_000, 'every job to run');
    expect(log.overlaps).toEqual([]);
    for (const group of groups) expect(log.order(group)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(log.maxGroupsAtOnce).toBeGreaterThan(1);
    // The last acknowledgement frees the last group.
    await waitFor(async () => (await queues[2].stats('g.order')).active === 0, 5_000, 'the last acknowledgement');
    expect(await queues[2].stats('g.order')).toMatchObject({ due: 0, active: 0, grouped: 0, busyGroups: 0 });
  });

  it('starts jobs of a group in due order, equal due times in schedule order', async () => {
    const [queue] = await start(1);
    const at = Date.now() + 400;
    await queue.schedule('g.due', 'late', { group: 'a', at: at + 200 });
    await queue.schedule('g.due', 'first', { group: 'a', at });
    await queue.schedule('g.due', 'second', { group: 'a', at });
    await queue.scheduleMany('g.due', [
      { payload: 'third', group: 'a', at },
      { payload: 'fourth', group: 'a', at },
    ]);
    expect(await queue.stats('g.due')).toMatchObject({ scheduled: 0, due: 0, grouped: 5 });
    const seen: string[] = [];
    queue.consume<string>(
      'g.due',
      (payload) => {
        seen.push(payload);
      },
      { concurrency: 4 },
    );
    await waitFor(() => seen.length === 5, 10_000, 'the group to drain');
    expect(seen).toEqual(['first', 'second', 'third', 'fourth', 'late']);
  });

  it('holds the next job of a group while the one before waits for its retry; a dead letter frees the group', async () => {
    const [queue] = await start(1, { delayQueue: { backoff: { delay: 300, jitter: 0 }, retention: { deadLetterMaxCount: 10 } } });
    const seen: string[] = [];
    queue.consume<string>(
      'g.retry',
      (payload, job) => {
        seen.push(`${payload}#${job.attempt}`);
        if (payload === 'flaky' && job.attempt === 1) throw new Error('first attempt fails');
        if (payload === 'doomed') throw new Error('always fails');
      },
      { concurrency: 4 },
    );
    await queue.scheduleMany('g.retry', [
      { payload: 'flaky', group: 'r' },
      { payload: 'after-flaky', group: 'r' },
      { payload: 'doomed', group: 'd', maxAttempts: 2 },
      { payload: 'after-doomed', group: 'd' },
    ]);
    await waitFor(() => seen.length === 6, 10_000, 'both groups to finish');
    const index = (entry: string) => seen.indexOf(entry);
    expect(index('after-flaky#1')).toBeGreaterThan(index('flaky#2'));
    expect(index('after-doomed#1')).toBeGreaterThan(index('doomed#2'));
    expect((await queue.deadLetters('g.retry')).map((job) => job.id)).toHaveLength(1);
    expect(await queue.stats('g.retry')).toMatchObject({ busyGroups: 0, grouped: 0, dead: 1 });
  });

  it('serves groups fairly: one job of a new group does not wait behind a group with a long backlog', async () => {
    const [queue] = await start(1);
    await queue.scheduleMany(
      'g.fair',
      Array.from({ length: 200 }, (_, seq) => ({ payload: `big:${seq}`, group: 'big' })),
    );
    const seen: string[] = [];
    const firstRan = deferred();
    queue.consume<string>(
      'g.fair',
      async (payload) => {
        seen.push(payload);
        if (seen.length === 1) await firstRan.promise;
      },
      { concurrency: 1 },
    );
    await waitFor(() => seen.length === 1, 5_000, 'the big group to start');
    await queue.schedule('g.fair', 'small', { group: 'small' });
    firstRan.resolve();
    await waitFor(() => seen.includes('small'), 10_000, 'the small group to run');
    expect(seen.indexOf('small')).toBeLessThanOrEqual(2);
  });

  it('runs up to groupConcurrency jobs of a group at once, never more', async () => {
    const [queue] = await start(1);
    const log = new GroupLog(2);
    const release = deferred();
    queue.consume<{ group: string; seq: number }>(
      'g.two',
      async ({ group, seq }) => {
        log.start(group, seq);
        await release.promise;
        log.end(group);
      },
      { concurrency: 8, groupConcurrency: 2 },
    );
    await queue.scheduleMany(
      'g.two',
      Array.from({ length: 6 }, (_, seq) => ({ payload: { group: 'x', seq }, group: 'x' })),
    );
    await waitFor(() => log.starts.length === 2, 5_000, 'two jobs of the group to start');
    expect(await queue.stats('g.two')).toMatchObject({ active: 2, grouped: 4, busyGroups: 1 });
    release.resolve();
    await waitFor(() => log.starts.length === 6, 5_000, 'the rest of the group');
    expect(log.overlaps).toEqual([]);
    expect(log.maxPerGroup).toBe(2);
    expect(log.order('x')).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('shows, moves, cancels and replaces a job waiting for its group, keeping the group going', async () => {
    const [queue] = await start(1);
    const hold = deferred();
    const seen: string[] = [];
    queue.consume<string>('g.ops', async (payload) => {
      seen.push(payload);
      if (payload === 'blocker') await hold.promise;
    });
    await queue.schedule('g.ops', 'blocker', { group: 'o', id: 'blocker' });
    await waitFor(() => seen.length === 1, 5_000, 'the blocker to start');
    await queue.scheduleMany('g.ops', [
      { payload: 'cancel-me', group: 'o', id: 'c' },
      { payload: 'replace-me', group: 'o', id: 'r' },
      { payload: 'move-me', group: 'o', id: 'm' },
      { payload: 'last', group: 'o', id: 'l' },
    ]);
    expect(await queue.get('g.ops', 'c')).toMatchObject({ state: 'waiting-group', payload: 'cancel-me' });
    expect(await queue.cancel('g.ops', 'c')).toBe(true);
    expect(await queue.get('g.ops', 'c')).toBeNull();
    await queue.schedule('g.ops', 'replaced', { group: 'o', id: 'r', replace: true });
    expect(await queue.reschedule('g.ops', 'm', { delay: 60_000 })).toBe(true);
    expect(await queue.get('g.ops', 'm')).toMatchObject({ state: 'waiting-group' });
    expect((await queue.get('g.ops', 'm'))!.scheduledAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);
    expect(await queue.stats('g.ops')).toMatchObject({ active: 1, grouped: 3, busyGroups: 1 });
    hold.resolve();
    await waitFor(() => seen.length === 3, 5_000, 'the group to go on');
    expect(seen).toEqual(['blocker', 'last', 'replaced']);
    expect(await queue.cancel('g.ops', 'm')).toBe(true);
    expect(await queue.stats('g.ops')).toMatchObject({ scheduled: 0, due: 0, active: 0, grouped: 0, busyGroups: 0 });
  });

  it('retries a dead job of a group behind the jobs its group has waiting', async () => {
    const [queue] = await start(1, { delayQueue: { retention: { deadLetterMaxCount: 10 } } });
    const fail = { on: true };
    const seen: string[] = [];
    const hold = deferred();
    queue.consume<string>('g.dead', async (payload) => {
      seen.push(payload);
      if (payload === 'dies' && fail.on) throw new Error('no');
      if (payload === 'holder') await hold.promise;
    });
    await queue.schedule('g.dead', 'dies', { group: 'z', id: 'dies', maxAttempts: 1 });
    await waitFor(async () => (await queue.stats('g.dead')).dead === 1, 5_000, 'the job to die');
    await queue.scheduleMany('g.dead', [
      { payload: 'holder', group: 'z' },
      { payload: 'next', group: 'z' },
    ]);
    await waitFor(() => seen.includes('holder'), 5_000, 'the holder to start');
    fail.on = false;
    expect(await queue.retryDead('g.dead', 'dies')).toBe(1);
    expect(await queue.get('g.dead', 'dies')).toMatchObject({ state: 'waiting-group' });
    hold.resolve();
    await waitFor(() => seen.length === 4, 5_000, 'the group to drain');
    expect(seen).toEqual(['dies', 'holder', 'next', 'dies']);
  });

  it('keeps each group on one shard of a sharded topic; get, cancel and reschedule find its jobs by id', async () => {
    const queues = await start(2, { delayQueue: { topics: { 'g.sharded': { shards: 3 } } } });
    const log = new GroupLog();
    const hold = deferred();
    const handler = async ({ group, seq }: { group: string; seq: number }) => {
      log.start(group, seq);
      if (group === 'held') await hold.promise;
      await new Promise((resolve) => setTimeout(resolve, 1));
      log.end(group);
    };
    for (const q of queues) q.consume('g.sharded', handler, { concurrency: 6 });
    const groups = Array.from({ length: 6 }, (_, g) => `tenant:${g}`);
    await queues[0].scheduleMany(
      'g.sharded',
      groups.flatMap((group) => Array.from({ length: 8 }, (_, seq) => ({ payload: { group, seq }, group }))),
    );
    await queues[1].schedule('g.sharded', { group: 'held', seq: 0 }, { group: 'held', id: 'held-0' });
    await waitFor(() => log.order('held').length === 1, 10_000, 'the held group to start');
    // Ids whose own shard is not their group's: found all the same.
    const ids = Array.from({ length: 6 }, (_, i) => `held-${i + 1}`);
    await queues[1].scheduleMany(
      'g.sharded',
      ids.map((id, i) => ({ payload: { group: 'held', seq: i + 1 }, group: 'held', id })),
    );
    for (const id of ids) expect(await queues[0].get('g.sharded', id)).toMatchObject({ id, state: 'waiting-group' });
    expect(await queues[0].cancel('g.sharded', 'held-6')).toBe(true);
    expect(await queues[0].reschedule('g.sharded', 'held-5', { delay: 200 })).toBe(true);
    hold.resolve();
    await waitFor(() => log.starts.length === 6 * 8 + 6, 20_000, 'every job to run');
    expect(log.overlaps).toEqual([]);
    for (const group of groups) expect(log.order(group)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(log.order('held')).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await queues[0].get('g.sharded', 'held-6')).toBeNull();
  });

  it('gives the handler its group', async () => {
    const [queue] = await start(1);
    const contexts: JobContext[] = [];
    queue.consume('g.ctx', (_payload, job) => {
      contexts.push(job);
    });
    await queue.schedule('g.ctx', 1, { group: 'tenant:münchen' });
    await queue.schedule('g.ctx', 2);
    await waitFor(() => contexts.length === 2, 5_000, 'both jobs');
    expect(contexts.map((c) => c.group).sort()).toEqual(['tenant:münchen', undefined].sort());
  });

  it('refuses a group name it cannot store, and a bad groupConcurrency', async () => {
    const [queue] = await start(1);
    for (const group of ['', 'has"quote', 'back\\slash', 'line\nbreak', 'x'.repeat(257), 42]) {
      await expect(queue.schedule('g.bad', 1, { group: group as string })).rejects.toThrow(InvalidJobError);
    }
    await expect(queue.schedule('g.bad', 1, { group: 'has"quote' })).rejects.toThrow(/group.*quotes/);
    for (const groupConcurrency of [0, 1.5, -1, '2']) {
      expect(() => queue.consume('g.bad', () => undefined, { groupConcurrency: groupConcurrency as number })).toThrow(InvalidOptionsError);
    }
    expect(await queue.stats('g.bad')).toMatchObject({ scheduled: 0, due: 0, grouped: 0 });
  });
});
