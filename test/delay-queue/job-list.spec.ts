import { InvalidOptionsError, type DelayedJob, type DelayedJobState, type DelayQueueService } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { operationKey } from '../../lib/delay-queue/jobs/operation-record.js';
import { useDelayInstances } from './support/delay-instances.js';
import { claimByHand } from './support/claim-by-hand.js';
import { deferred, waitFor } from '../support/timing.js';

/** Every page of one state, following cursors; the ids in the order listed. */
async function listAll(queue: DelayQueueService, topic: string, state: DelayedJobState, limit: number): Promise<DelayedJob[]> {
  const jobs: DelayedJob[] = [];
  let cursor: string | undefined;
  do {
    const page = await queue.list(topic, { state, limit, cursor });
    expect(page.jobs.length).toBeLessThanOrEqual(limit);
    jobs.push(...page.jobs);
    cursor = page.cursor;
  } while (cursor);
  return jobs;
}

/** A small deterministic random sequence, so a failing run can be repeated from its seed. */
function randomFrom(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

describe('DelayQueueService.list', () => {
  const instances = useDelayInstances('jlist');

  it('lists every state, whole jobs, consistent with get(), across two instances', async () => {
    const [a, b] = await instances.start(2, { delayQueue: { retention: { deadLetterMaxCount: 10 }, backoff: { delay: 10, jitter: 0 } } });
    const hold = deferred();
    const started: string[] = [];
    b.queue.consume<string>(
      'l.states',
      async (payload, job) => {
        started.push(job.id);
        if (payload === 'dies') throw new Error('boom');
        if (payload === 'blocker') await hold.promise;
        return payload === 'kept' ? { done: payload } : undefined;
      },
      { maxAttempts: 1, keepCompleted: { count: 10 } },
    );
    await a.queue.schedule('l.states', 'kept', { id: 'kept' });
    await a.queue.schedule('l.states', 'dies', { id: 'dies' });
    await waitFor(async () => (await a.queue.stats('l.states')).dead === 1 && started.includes('kept'), 10_000, 'kept and dead');
    await waitFor(async () => (await a.queue.get('l.states', 'kept'))?.state === 'completed', 10_000, 'kept to complete');
    await a.queue.schedule('l.states', 'blocker', { id: 'blocker', group: 'g' });
    await waitFor(() => started.includes('blocker'), 10_000, 'the blocker to start');
    await a.queue.schedule('l.states', 'in-group', { id: 'in-group', group: 'g' });
    await a.queue.schedule('l.states', 'later', { id: 'later', delay: 3_600_000 });
    await a.queue.pause('l.states');
    await a.queue.schedule('l.states', 'now', { id: 'now' });

    const expected: Record<DelayedJobState, string> = {
      completed: 'kept',
      dead: 'dies',
      active: 'blocker',
      'waiting-group': 'in-group',
      scheduled: 'later',
      due: 'now',
    };
    for (const [state, id] of Object.entries(expected) as Array<[DelayedJobState, string]>) {
      const page = await a.queue.list('l.states', { state });
      expect(page).toEqual({ jobs: [expect.objectContaining({ id, state, payload: id })] });
      const got = await b.queue.get('l.states', id);
      expect(got?.state).toBe(state);
      // The listed job is get()'s job (the kept result included).
      expect(page.jobs[0]).toEqual(got);
    }
    expect((await a.queue.list('l.states', { state: 'completed' })).jobs[0]).toMatchObject({ result: { done: 'kept' } });
    expect((await a.queue.list('l.states', { state: 'waiting-group' })).jobs[0]).toMatchObject({
      group: 'g',
      scheduledAt: expect.any(Date),
    });
    expect((await a.queue.list('l.states', { state: 'dead' })).jobs[0]).toMatchObject({
      lastError: 'Error: boom',
      diedAt: expect.any(Date),
    });
    hold.resolve();
    await a.queue.resume('l.states');
  });

  it('pages through a state in order, each job once, with a cursor only while more may follow', async () => {
    const [a, b] = await instances.start(2);
    const ids = Array.from({ length: 95 }, (_, i) => `j-${String(i).padStart(3, '0')}`);
    // Shuffled due times, several jobs per millisecond: ties are ordered by the zset's own order.
    await a.queue.scheduleMany(
      'l.pages',
      ids.map((id, i) => ({ payload: { i }, id, at: Date.now() + 3_600_000 + ((i * 37) % 20) })),
    );
    const listed = await listAll(b.queue, 'l.pages', 'scheduled', 7);
    expect(listed.map((job) => job.id).sort()).toEqual(ids);
    const times = listed.map((job) => job.scheduledAt!.getTime());
    expect(times).toEqual([...times].sort((x, y) => x - y));
    expect(listed.find((job) => job.id === 'j-010')?.payload).toEqual({ i: 10 });
    // Exactly `limit` left: the last page says so by returning no cursor after it.
    const first = await a.queue.list('l.pages', { state: 'scheduled', limit: 95 });
    expect(first.jobs).toHaveLength(95);
    expect(first.cursor).toBeUndefined();
    expect(await a.queue.list('l.pages', { state: 'due' })).toEqual({ jobs: [] });
  });

  it('pages dead letters newest first and visits a job that stayed exactly once while others are cancelled', async () => {
    const [a] = await instances.start(1);
    const ids = Array.from({ length: 40 }, (_, i) => `d-${i}`);
    await a.queue.scheduleMany(
      'l.dead',
      ids.map((id) => ({ payload: id, id, maxAttempts: 1 })),
    );
    a.queue.consume('l.dead', () => {
      throw new Error('no');
    });
    await waitFor(async () => (await a.queue.stats('l.dead')).dead === 40, 10_000, 'every job to die');
    const seen: DelayedJob[] = [];
    let cursor: string | undefined;
    let n = 0;
    do {
      const page = await a.queue.list('l.dead', { state: 'dead', limit: 6, cursor });
      seen.push(...page.jobs);
      cursor = page.cursor;
      // Between pages, take out jobs ahead of and behind the cursor.
      if (n++ === 1) for (const id of ['d-0', 'd-20', 'd-39']) await a.queue.retryDead('l.dead', id);
    } while (cursor);
    const seenIds = seen.map((job) => job.id);
    expect(new Set(seenIds).size).toBe(seenIds.length);
    for (const id of ids.filter((id) => !['d-0', 'd-20', 'd-39'].includes(id))) expect(seenIds).toContain(id);
    const times = seen.map((job) => job.diedAt!.getTime());
    expect(times).toEqual([...times].sort((x, y) => y - x));
  });

  it('refuses a bad state, limit or cursor with a typed error naming the option', async () => {
    const [a] = await instances.start(1);
    await a.queue.schedule('l.bad', 1, { delay: 60_000 });
    const page = await a.queue.list('l.bad', { state: 'scheduled', limit: 1 });
    expect(page.cursor).toBeUndefined();
    await a.queue.schedule('l.bad', 2, { delay: 60_000 });
    const cursor = (await a.queue.list('l.bad', { state: 'scheduled', limit: 1 })).cursor!;
    expect(cursor).toEqual(expect.any(String));
    const cases: Array<[unknown, RegExp]> = [
      [{ state: 'waiting' }, /list\.state.*"waiting".*waiting-group/],
      [{ state: 'due', limit: 0 }, /list\.limit.*1 to 1000/],
      [{ state: 'due', limit: 1001 }, /list\.limit/],
      [{ state: 'due', limit: 2.5 }, /list\.limit/],
      [{ state: 'due', cursor: 'nonsense' }, /list\.cursor.*not a cursor/],
      [{ state: 'due', cursor: '' }, /list\.cursor/],
      [{ state: 'due', cursor }, /list\.cursor.*state "scheduled"/],
      [{ state: 'due', extra: 1 }, /extra/],
      [null, /list/],
    ];
    for (const [options, message] of cases) {
      const call = a.queue.list('l.bad', options as never);
      await expect(call).rejects.toThrow(InvalidOptionsError);
      await expect(a.queue.list('l.bad', options as never)).rejects.toThrow(message);
    }
    await expect(a.queue.list('l.other', { state: 'scheduled', cursor })).rejects.toThrow(/topic "l\.bad"/);
    expect((await a.queue.list('l.bad', { state: 'scheduled', cursor })).jobs).toHaveLength(1);
  });

  it.each([1, 3])(
    'randomized, %i shard(s): pages while jobs are scheduled, claimed, cancelled and moved: none twice, every job that stayed',
    async (shards) => {
      const topic = `l.random${shards}`;
      const options = shards > 1 ? { delayQueue: { topics: { [topic]: { shards } } } } : {};
      const [a, b] = await instances.start(2, options);
      const seed = Date.now() % 100_000;
      const random = randomFrom(seed);
      const base = Date.now();
      const initial = Array.from({ length: 450 }, (_, i) => `r-${i}`);
      // A third due now (for claims), a third later, a third in 17 groups' queues (due now or later);
      // many share a millisecond.
      const classOf = (i: number) => (['due', 'scheduled', 'waiting-group'] as const)[i % 3];
      await a.queue.scheduleMany(
        topic,
        initial.map((id, i) => ({
          payload: i,
          id,
          ...(classOf(i) === 'scheduled' || (classOf(i) === 'waiting-group' && i % 4 === 0)
            ? { at: base + 3_600_000 + (i % 11) }
            : { at: base - 1000 + (i % 7) }),
          ...(classOf(i) === 'waiting-group' ? { group: `grp${i % 17}` } : {}),
        })),
      );
      const keySpace = new RedisKeySpace(a.keyPrefix);
      const shardKeys = Array.from({ length: shards }, (_, n) => keySpace.topic(shards > 1 ? `${topic}#${n}` : topic));
      const touched = new Set<string>();
      const moved = new Set<string>();
      for (const state of ['due', 'scheduled', 'waiting-group'] as const) {
        const seen: string[] = [];
        let cursor: string | undefined;
        let step = 0;
        do {
          const queue = random() < 0.5 ? a.queue : b.queue;
          const page = await queue.list(topic, { state, limit: 1 + Math.floor(random() * 15), cursor });
          for (const job of page.jobs) expect(job.state).toBe(state);
          seen.push(...page.jobs.map((job) => job.id));
          cursor = page.cursor;
          // Between pages, some moves: cancel, reschedule, claim (not while listing scheduled jobs), schedule new.
          for (let k = 0; k < 4; k++) {
            const id = initial[Math.floor(random() * initial.length)];
            const roll = random();
            if (roll < 0.6) touched.add(id);
            if (roll < 0.3) await a.queue.cancel(topic, id);
            else if (
              roll < 0.6 &&
              (await b.queue.reschedule(topic, id, { at: base + (random() < 0.5 ? -500 : 3_600_000) + Math.floor(random() * 20) }))
            )
              moved.add(id);
            else if (roll < 0.8 && state !== 'scheduled') {
              const keys = shardKeys[Math.floor(random() * shards)];
              await claimByHand(instances.redis(), keys, operationKey(keys.jobs, `hand-${seed}-${step}-${k}`), {
                maxClaims: 2,
                visibilityMs: 3_600_000,
                defaultMaxAttempts: 3,
              });
            } else {
              const group = state === 'waiting-group' ? { group: `grp${Math.floor(random() * 20)}` } : {};
              await a.queue.schedule(topic, 'new', { at: base + (random() < 0.5 ? -200 : 3_600_100), ...group });
            }
          }
          step++;
        } while (cursor);
        // Twice only at two places: a job rescheduled meanwhile (its time in the state changed).
        const dupes = seen.filter((id, i) => seen.indexOf(id) !== i && !moved.has(id));
        expect({ seed, state, dupes }).toEqual({ seed, state, dupes: [] });
        // Claims take the oldest due jobs wherever the cursor is: a claimed job counts as moved.
        const claimed = new Set((await listAll(a.queue, topic, 'active', 1000)).map((job) => job.id));
        const stayed = initial.filter((id, i) => classOf(i) === state && !touched.has(id) && !claimed.has(id));
        const missed = stayed.filter((id) => !seen.includes(id));
        expect({ seed, state, missed }).toEqual({ seed, state, missed: [] });
        expect(stayed.length).toBeGreaterThan(30);
      }
    },
    60_000,
  );
});
