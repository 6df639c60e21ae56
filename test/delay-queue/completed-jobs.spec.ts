import { jest } from '@jest/globals';
import { Injectable, Logger } from '@nestjs/common';
import { InvalidOptionsError, OnDelayed, type DelayQueueService, type JobContext } from '../../lib/index.js';
import { useRawRedis } from '../support/test-app.js';
import { completedJob } from './support/completed-job.js';
import { useDelayApp } from './support/delay-test-app.js';
import { waitFor } from '../support/timing.js';
import { topicStats } from '../support/topic-stats.js';

@Injectable()
class InvoiceHandlers {
  @OnDelayed('invoice.render', { keepCompleted: { count: 10 } })
  render({ invoice }: { invoice: number }): { pdf: string; pages: number } {
    return { pdf: `invoice-${invoice}.pdf`, pages: 2 };
  }
}

/**
 * Completed jobs kept with `keepCompleted`: what get(), stats() and schedule() see, the bounds, and
 * that a topic without the option keeps nothing (no key of the feature is ever written for it).
 */
describe('Completed jobs: results and history (keepCompleted)', () => {
  const t = useDelayApp({}, [InvoiceHandlers]);
  const redis = useRawRedis();
  let queue: DelayQueueService;
  beforeAll(() => (queue = t.queue));
  const keyOf = (topic: string, part: string) => `${t.keyPrefix}:dq:{${topic}}:${part}`;
  /** Runs one job to its end on a running consumer that keeps completed jobs and returns get() of it. */
  const runToEnd = async (topic: string, payload: unknown, id: string) => {
    await queue.schedule(topic, payload, { id });
    return completedJob(queue, topic, id);
  };

  afterAll(() => jest.restoreAllMocks());

  it('keeps a completed job with what its handler returned and when it finished (Redis clock)', async () => {
    const consumer = queue.consume<{ n: number }>('kept', ({ n }) => ({ doubled: n * 2, big: 2 ** 53 - 1, list: [] }), {
      keepCompleted: { count: 100 },
    });
    const before = Number((await redis.time())[0]) * 1000;
    const job = await runToEnd('kept', { n: 21 }, 'k1');
    const after = Number((await redis.time())[0]) * 1000 + 1000;
    expect(job).toMatchObject({
      id: 'k1',
      topic: 'kept',
      state: 'completed',
      payload: { n: 21 },
      attempts: 1,
      result: { doubled: 42, big: 2 ** 53 - 1, list: [] },
    });
    expect(job!.finishedAt!.getTime()).toBeGreaterThanOrEqual(before);
    expect(job!.finishedAt!.getTime()).toBeLessThanOrEqual(after);
    expect(await queue.stats('kept')).toMatchObject({ scheduled: 0, due: 0, active: 0, dead: 0, completed: 1 });
    await consumer.close();
  });

  it('keeps nothing, and writes no key of the feature, for a topic without keepCompleted', async () => {
    let ran = false;
    const consumer = queue.consume('plain', () => {
      ran = true;
      return { ignored: true };
    });
    await queue.schedule('plain', 1, { id: 'p1' });
    await waitFor(async () => ran && (await queue.get('plain', 'p1')) === null, 5_000, 'p1 to run and be deleted');
    expect(await queue.stats('plain')).toEqual(topicStats());
    expect(await redis.exists(keyOf('plain', 'completed'), keyOf('plain', 'results'), keyOf('plain', 'jobs'))).toBe(0);
    await consumer.close();
  });

  it('keeps a job whose handler returned nothing without a result, and null as null', async () => {
    const consumer = queue.consume<string>('shapes', (kind) => (kind === 'null' ? null : undefined), { keepCompleted: { count: 100 } });
    const nothing = await runToEnd('shapes', 'undefined', 'nothing');
    expect(nothing).toMatchObject({ state: 'completed' });
    expect(nothing).not.toHaveProperty('result');
    expect(await runToEnd('shapes', 'null', 'null')).toMatchObject({ state: 'completed', result: null });
    await consumer.close();
  });

  it('completes a job whose result is not JSON data, keeps it without a result and warns naming the path', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    let runs = 0;
    const consumer = queue.consume(
      'odd-result',
      () => {
        runs++;
        return { at: new Date() };
      },
      { keepCompleted: { count: 100 } },
    );
    const job = await runToEnd('odd-result', 1, 'odd');
    expect(job).toMatchObject({ state: 'completed', attempts: 1 });
    expect(job).not.toHaveProperty('result');
    expect(runs).toBe(1);
    expect(warn.mock.calls.map(([message]) => String(message)).join('\n')).toMatch(
      /Job "odd" of topic "odd-result" completed, but its result is not kept: .*result\.at.*Date/,
    );
    warn.mockRestore();
    await consumer.close();
  });

  it('keeps at most `count` completed jobs per topic, the newest, and drops the others whole', async () => {
    const consumer = queue.consume<number>('count', (n) => n * 10, { keepCompleted: { count: 3 } });
    for (let i = 0; i < 6; i++) await runToEnd('count', i, `c${i}`);
    const kept = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => queue.get('count', `c${i}`)));
    expect(kept.map((job) => (job === null ? null : job.result))).toEqual([null, null, null, 30, 40, 50]);
    expect(await redis.hlen(keyOf('count', 'jobs'))).toBe(3);
    expect(await redis.hlen(keyOf('count', 'results'))).toBe(3);
    expect(await redis.zcard(keyOf('count', 'completed'))).toBe(3);
    await consumer.close();
  });

  it('drops completed jobs older than `age`, on the consumer’s next look at the topic even with no new job', async () => {
    const consumer = queue.consume('age', () => 'done', { keepCompleted: { age: 300 }, maxIdleWait: 200 });
    expect(await runToEnd('age', 1, 'a1')).toMatchObject({ state: 'completed', result: 'done' });
    await waitFor(async () => (await queue.get('age', 'a1')) === null, 5_000, 'the old completed job to go');
    expect(await redis.exists(keyOf('age', 'jobs'), keyOf('age', 'results'), keyOf('age', 'completed'))).toBe(0);
    await consumer.close();
  });

  it('de-duplicates a schedule() with the id of a kept completed job; replace or cancel lets the id run again', async () => {
    const runs: string[] = [];
    const consumer = queue.consume<string>(
      'dedup',
      (payload) => {
        runs.push(payload);
        return payload.toUpperCase();
      },
      { keepCompleted: { count: 100 } },
    );
    expect(await runToEnd('dedup', 'first', 'd')).toMatchObject({ result: 'FIRST' });
    // Kept: the same id finds the completed job and schedules nothing.
    expect(await queue.schedule('dedup', 'second', { id: 'd' })).toBe('d');
    await queue.schedule('dedup', 'marker', { id: 'marker' });
    await waitFor(() => runs.includes('marker'), 5_000, 'a later job to run');
    expect(runs).toEqual(['first', 'marker']);
    expect(await queue.get('dedup', 'd')).toMatchObject({ state: 'completed', payload: 'first', result: 'FIRST' });
    // replace: the id runs again with the new payload.
    await queue.schedule('dedup', 'third', { id: 'd', replace: true });
    await waitFor(async () => (await queue.get('dedup', 'd'))?.result === 'THIRD', 5_000, 'the replacement to complete');
    // cancel removes the kept job: the id can be scheduled afresh.
    expect(await queue.cancel('dedup', 'd')).toBe(true);
    expect(await queue.get('dedup', 'd')).toBeNull();
    await queue.schedule('dedup', 'fourth', { id: 'd' });
    await waitFor(async () => (await queue.get('dedup', 'd'))?.result === 'FOURTH', 5_000, 'the new job to complete');
    expect(runs).toEqual(['first', 'marker', 'third', 'fourth']);
    await consumer.close();
  });

  it('trimming the old record of an id scheduled again keeps the new job', async () => {
    const consumer = queue.consume<string>('again', (payload) => payload, { keepCompleted: { count: 1 } });
    await runToEnd('again', 'old', 'x');
    // x waits again (replaced), while its completed record is still the only one kept.
    await queue.schedule('again', 'new', { id: 'x', replace: true, delay: 3_600_000 });
    // The next completion trims x's old record (count 1): the waiting x must stay whole.
    await runToEnd('again', 'other', 'y');
    expect(await queue.get('again', 'x')).toMatchObject({ state: 'scheduled', payload: 'new', attempts: 0 });
    expect(await queue.get('again', 'y')).toMatchObject({ state: 'completed', result: 'other' });
    expect(await redis.zrange(keyOf('again', 'completed'), '0', '-1')).toEqual(['y']);
    await consumer.close();
  });

  it('keeps results of an @OnDelayed handler with keepCompleted', async () => {
    await queue.schedule('invoice.render', { invoice: 7 }, { id: 'inv-7' });
    const job = await completedJob(queue, 'invoice.render', 'inv-7');
    expect(job.result).toEqual({ pdf: 'invoice-7.pdf', pages: 2 });
  });

  it('a handler typed to return a value still compiles where one returning void did', () => {
    const returnsValue = (n: number, job: JobContext): Promise<{ id: string; n: number }> => Promise.resolve({ id: job.id, n });
    const returnsVoid = (): void => undefined;
    const consumers = [queue.consume('typed.value', returnsValue), queue.consume('typed.void', returnsVoid)];
    return Promise.all(consumers.map((consumer) => consumer.close()));
  });

  it.each([
    [{}, /`keepCompleted`: has neither `count` nor `age`/],
    [{ count: 0 }, /keepCompleted\.count.*got 0/],
    [{ age: -5 }, /keepCompleted\.age.*got -5/],
    [{ count: 1.5 }, /keepCompleted\.count/],
    [{ max: 3 }, /keepCompleted\.max.*unknown option/],
    [true, /keepCompleted.*got true/],
  ])('refuses keepCompleted %j with InvalidOptionsError', (keepCompleted, message) => {
    let error: unknown;
    try {
      queue.consume('refused', () => undefined, { keepCompleted: keepCompleted as never });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as Error).message).toMatch(message);
  });
});
