import { jest } from '@jest/globals';
import { InvalidOptionsError, JobRateLimitedError, RedisLockEvents, type JobRateLimitedEvent } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { shardTopicName } from '../../lib/core/keys/topic-name.js';
import { claimDueJobsScript } from '../../lib/delay-queue/scripts/claim-due-jobs.lua.js';
import type { DelayTestApp } from './support/delay-test-app.js';
import { useDelayInstances } from './support/delay-instances.js';
import { consumerLookedTwice } from './support/consumer-looked-twice.js';
import { deferred, waitFor } from '../support/timing.js';

/**
 * `throw new JobRateLimitedError(retryAfterMs)`: the job goes back without spending an attempt, and
 * no job of its topic is claimed by any instance until the block's end (Redis server clock).
 */
describe('JobRateLimitedError', () => {
  const apps = useDelayInstances('rate-limited');

  function rateLimitedEvents(app: DelayTestApp): JobRateLimitedEvent[] {
    const events: JobRateLimitedEvent[] = [];
    app.app.get(RedisLockEvents).on('job.rate-limited', (event) => void events.push(event));
    return events;
  }

  it('takes a whole number of ms from 1 to one day, else throws InvalidOptionsError', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 86_400_001, '100' as unknown as number]) {
      expect(() => new JobRateLimitedError(bad)).toThrow(InvalidOptionsError);
    }
    expect(() => new JobRateLimitedError(0)).toThrow(/whole number of milliseconds from 1 to 86400000/);
    expect(new JobRateLimitedError(86_400_000)).toMatchObject({ code: 'JOB_RATE_LIMITED', retryAfterMs: 86_400_000 });
  });

  it('blocks the topic on every instance until the block ends, without spinning; other topics go on', async () => {
    const [a, b] = await apps.start(2);
    const topic = 'rl.block';
    const blocked = new RedisKeySpace(a.keyPrefix).topic(topic).blocked;
    const limitedA = rateLimitedEvents(a);
    const limitedB = rateLimitedEvents(b);
    const runs: Array<{ id: string; attempt: number; claimedAt: number }> = [];
    const handler = (_payload: unknown, job: { id: string; attempt: number; claimedAt: Date }) => {
      runs.push({ id: job.id, attempt: job.attempt, claimedAt: job.claimedAt.getTime() });
      if (job.id === 'limited' && runs.filter((run) => run.id === 'limited').length === 1) throw new JobRateLimitedError(3_000);
    };
    const claims = jest.spyOn(claimDueJobsScript, 'call');
    try {
      a.queue.consume(topic, handler, { concurrency: 2 });
      b.queue.consume(topic, handler, { concurrency: 2 });
      await a.queue.schedule(topic, 0, { id: 'limited' });
      await waitFor(() => limitedA.length + limitedB.length === 1, 10_000, 'the rate-limited run');
      const [event] = [...limitedA, ...limitedB];
      expect(event).toMatchObject({ topic, id: 'limited', attempt: 1, retryAfterMs: 3_000 });
      const claimsBefore = claims.mock.calls.filter(([, keys]) => (keys as { blocked: string }).blocked === blocked).length;

      // Jobs due during the block, from both instances; another topic runs meanwhile.
      await a.queue.scheduleMany(topic, [{ payload: 1 }, { payload: 2 }]);
      await b.queue.schedule(topic, 3);
      const other = deferred<{ claimedAt: number; blockLeftMs: number }>();
      b.queue.consume('rl.other', async (_payload, job) => {
        other.resolve({ claimedAt: job.claimedAt.getTime(), blockLeftMs: await apps.redis().pttl(blocked) });
      });
      await a.queue.schedule('rl.other', 'meanwhile');
      const otherRun = await other.promise;
      expect(otherRun.claimedAt).toBeLessThan(event.blockedUntilMs);
      expect(otherRun.blockLeftMs).toBeGreaterThan(0);

      await waitFor(() => runs.length === 5, 15_000, 'every job after the block');
      const afterBlock = runs.slice(1);
      // Nothing of the topic was claimed before the block's end, on either instance.
      for (const run of afterBlock) expect(run.claimedAt).toBeGreaterThanOrEqual(event.blockedUntilMs);
      // The job went back without spending its attempt.
      expect(runs.filter((run) => run.id === 'limited').map((run) => run.attempt)).toEqual([1, 1]);
      // Consumers slept through the block: a few claims (the wake-ups of the three schedules, the block's end), no spin.
      const claimsDuring = claims.mock.calls.filter(([, keys]) => (keys as { blocked: string }).blocked === blocked).length - claimsBefore;
      expect(claimsDuring).toBeLessThan(30);
      await waitFor(async () => (await a.queue.stats(topic)).active === 0, 5_000, 'the topic to settle');
      expect(await a.queue.stats(topic)).toMatchObject({ due: 0, active: 0, dead: 0 });
    } finally {
      claims.mockRestore();
    }
  });

  it('spends no attempt: a job with maxAttempts 1 rate limited twice still runs and succeeds', async () => {
    const [a] = await apps.start(1, { delayQueue: { maxAttempts: 1 } });
    const limited = rateLimitedEvents(a);
    const runs: string[] = [];
    a.queue.consume('rl.attempts', (_payload, job) => {
      runs.push(`${job.id}@${job.attempt}`);
      if (runs.length <= 2) throw new JobRateLimitedError(50);
    });
    await a.queue.schedule('rl.attempts', 0, { id: 'j' });
    await waitFor(async () => runs.length === 3 && (await a.queue.stats('rl.attempts')).active === 0, 10_000, 'the third run');
    expect(runs).toEqual(['j@1', 'j@1', 'j@1']);
    expect(limited.map((event) => event.attempt)).toEqual([1, 1]);
    expect(await a.queue.stats('rl.attempts')).toMatchObject({ due: 0, dead: 0 });
    expect(await a.queue.get('rl.attempts', 'j')).toBeNull();
  });

  it('with groups: the job goes back to the head of its group, the turn is released, and the group keeps its order', async () => {
    const [a] = await apps.start(1);
    const limited = rateLimitedEvents(a);
    const runs: Array<{ payload: string; claimedAt: number }> = [];
    a.queue.consume<string>(
      'rl.group',
      (payload, job) => {
        runs.push({ payload, claimedAt: job.claimedAt.getTime() });
        if (payload === 'g1' && runs.length === 1) throw new JobRateLimitedError(400);
      },
      { concurrency: 4 },
    );
    await a.queue.scheduleMany('rl.group', [
      { payload: 'g1', group: 'g' },
      { payload: 'g2', group: 'g' },
      { payload: 'h1', group: 'h' },
    ]);
    await waitFor(() => runs.length === 4, 10_000, 'every job');
    const [event] = limited;
    const order = runs.map((run) => run.payload);
    expect(order.filter((p) => p.startsWith('g'))).toEqual(['g1', 'g1', 'g2']);
    // h1 either ran before the block (claimed with g1) or after it; whatever ran after the first run waited for the block's end.
    for (const run of runs.slice(1))
      if (run.payload !== 'h1' || run.claimedAt > runs[0].claimedAt) expect(run.claimedAt).toBeGreaterThanOrEqual(event.blockedUntilMs);
    await waitFor(async () => (await a.queue.stats('rl.group')).active === 0, 5_000, 'the topic to settle');
    expect(await a.queue.stats('rl.group')).toMatchObject({ due: 0, grouped: 0, busyGroups: 0, dead: 0 });
  });

  it('with repeats: a rate-limited tick runs again after the block, once, and the schedule goes on', async () => {
    const [a] = await apps.start(1);
    const limited = rateLimitedEvents(a);
    const runs: Array<{ id: string; attempt: number; claimedAt: number }> = [];
    a.queue.consume('rl.repeat', (_payload, job) => {
      runs.push({ id: job.id, attempt: job.attempt, claimedAt: job.claimedAt.getTime() });
      if (runs.length === 1) throw new JobRateLimitedError(300);
    });
    await a.queue.repeat('rl.repeat', { every: 100 }, { id: 'beat' });
    await waitFor(() => runs.length >= 4, 10_000, 'ticks after the block');
    await a.queue.removeRepeat('rl.repeat', 'beat');
    const first = runs[0].id;
    expect(runs.filter((run) => run.id === first).map((run) => run.attempt)).toEqual([1, 1]);
    expect(runs[1].claimedAt).toBeGreaterThanOrEqual(limited[0].blockedUntilMs);
    // Each tick ran once (the rate-limited one twice), every run on attempt 1.
    const ids = runs.map((run) => run.id);
    expect(new Set(ids).size).toBe(ids.length - 1);
    expect(runs.every((run) => run.attempt === 1)).toBe(true);
  });

  it('a pause outlasts the block: nothing runs when the block ends until the topic is resumed', async () => {
    const [a] = await apps.start(1);
    const topic = 'rl.paused';
    const blocked = new RedisKeySpace(a.keyPrefix).topic(topic).blocked;
    const runs: string[] = [];
    a.queue.consume(topic, (_payload, job) => {
      runs.push(job.id);
      if (runs.length === 1) throw new JobRateLimitedError(200);
    });
    await a.queue.schedule(topic, 0, { id: 'limited' });
    await waitFor(() => runs.length === 1, 10_000, 'the rate-limited run');
    await a.queue.pause(topic);
    await waitFor(async () => (await apps.redis().exists(blocked)) === 0, 10_000, 'the block to end');
    await consumerLookedTwice(apps.redis(), a.queue, a.keyPrefix, topic);
    expect(runs).toEqual(['limited']);
    await a.queue.resume(topic);
    await waitFor(() => runs.length === 2, 10_000, 'the run after resume');
    expect(runs).toEqual(['limited', 'limited']);
  });

  it('on a sharded topic, blocks every shard until the same end', async () => {
    const topic = 'rl.sharded';
    const [a] = await apps.start(1, { delayQueue: { topics: { [topic]: { shards: 3 } } } });
    const keySpace = new RedisKeySpace(a.keyPrefix);
    const limited = rateLimitedEvents(a);
    const runs: Array<{ id: string; claimedAt: number }> = [];
    const release = deferred();
    a.queue.consume(
      topic,
      async (_payload, job) => {
        runs.push({ id: job.id, claimedAt: job.claimedAt.getTime() });
        if (job.id === 'limited' && runs.length === 1) throw new JobRateLimitedError(1_500);
        await release.promise;
      },
      { concurrency: 6 },
    );
    await a.queue.schedule(topic, 0, { id: 'limited' });
    await waitFor(() => limited.length === 1, 10_000, 'the rate-limited run');
    const untilMs = limited[0].blockedUntilMs;
    const ends = await Promise.all([0, 1, 2].map((i) => apps.redis().get(keySpace.topic(shardTopicName(topic, i)).blocked)));
    expect(ends).toEqual([String(untilMs), String(untilMs), String(untilMs)]);
    await a.queue.scheduleMany(
      topic,
      Array.from({ length: 6 }, (_, i) => ({ payload: i, id: `j${i}` })),
    );
    release.resolve();
    await waitFor(() => runs.length === 8, 10_000, 'every job after the block');
    for (const run of runs.slice(1)) expect(run.claimedAt).toBeGreaterThanOrEqual(untilMs);
  });
});
