import { InvalidJobError, InvalidOptionsError, type DelayQueueService } from '../../lib/index.js';
import { uniquePrefix, useRawRedis } from '../support/test-app.js';
import { createDelayApp, type DelayTestApp } from '../delay-queue/support/delay-test-app.js';
import { deferred, waitFor } from '../support/timing.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';

failOnUnhandledRejections();

/** Every option of groups, rate limits, kept jobs, bounded repeats and pause: with a wrong type or value fails with a typed error naming
 * it, and writes nothing. */
describe('Bad input to groups, rateLimit, keepCompleted, bounded repeats, progress and pause: a clear typed error, nothing written', () => {
  const apps: DelayTestApp[] = [];
  const redis = useRawRedis();
  let queue: DelayQueueService;
  let keyPrefix: string;

  beforeAll(async () => {
    muteNestLogger('error');
    keyPrefix = uniquePrefix('rvbad');
    const app = await createDelayApp({ keyPrefix });
    apps.push(app);
    queue = app.queue;
  });
  afterAll(async () => {
    await Promise.all(apps.map((t) => t.close()));
  });

  it.each<[string, unknown]>([
    ['null', null],
    ['an object', { id: 1 }],
    ['an array', ['a']],
    ['true', true],
    ['258 UTF-8 bytes', 'ü'.repeat(129)],
    ['a tab', 'a\tb'],
    ['DEL', 'a\u007fb'],
  ])('schedule() refuses a group that is %s with InvalidJobError naming group', async (_what, group) => {
    await expect(queue.schedule('rv.bad', 1, { group: group as string })).rejects.toThrow(InvalidJobError);
    await expect(queue.schedule('rv.bad', 1, { group: group as string })).rejects.toThrow(/group/);
  });

  it('scheduleMany() with one bad group writes none of the jobs', async () => {
    await expect(
      queue.scheduleMany('rv.bad.many', [
        { payload: 1, group: 'ok' },
        { payload: 2, group: 'has"quote' },
      ]),
    ).rejects.toThrow(InvalidJobError);
    expect((await redis.keys(`${keyPrefix}*rv.bad.many*`)).sort()).toEqual([]);
  });

  it.each<[string, unknown]>([
    ['max as a string', { max: '5', duration: 100 }],
    ['max fractional', { max: 1.5, duration: 100 }],
    ['duration 0', { max: 5, duration: 0 }],
    ['duration Infinity', { max: 5, duration: Infinity }],
    ['duration NaN', { max: 5, duration: NaN }],
    ['duration as a string', { max: 5, duration: '100' }],
    ['an array', [5, 100]],
  ])('consume() refuses rateLimit with %s (InvalidOptionsError naming it)', (_what, rateLimit) => {
    expect(() => queue.consume('rv.bad.rate', () => undefined, { rateLimit: rateLimit as never })).toThrow(InvalidOptionsError);
    expect(() => queue.consume('rv.bad.rate', () => undefined, { rateLimit: rateLimit as never })).toThrow(/rateLimit/);
  });

  it.each<[string, unknown]>([
    ['{}', {}],
    ['count 0', { count: 0 }],
    ['count as a string', { count: '10' }],
    ['age negative', { age: -1 }],
    ['age Infinity', { age: Infinity }],
    ['true', true],
    ['an unknown key', { count: 1, ttl: 5 }],
  ])('consume() refuses keepCompleted %s (InvalidOptionsError naming it)', (_what, keepCompleted) => {
    expect(() => queue.consume('rv.bad.keep', () => undefined, { keepCompleted: keepCompleted as never })).toThrow(InvalidOptionsError);
    expect(() => queue.consume('rv.bad.keep', () => undefined, { keepCompleted: keepCompleted as never })).toThrow(/keepCompleted/);
  });

  it.each<[string, Record<string, unknown>]>([
    ['limit 0', { limit: 0 }],
    ['limit fractional', { limit: 2.5 }],
    ['limit as a string', { limit: '3' }],
    ['startDate invalid', { startDate: new Date('nope') }],
    ['startDate as a string', { startDate: '2030-01-01' }],
    ['endDate before startDate', { startDate: Date.now() + 60_000, endDate: Date.now() + 30_000 }],
    ['endDate in 2200', { endDate: Date.UTC(2200, 0, 1) }],
  ])('repeat() refuses %s with InvalidOptionsError and stores nothing', async (_what, bounds) => {
    await expect(queue.repeat('rv.bad.repeat', { every: 1000 }, { id: 'r', ...bounds } as never)).rejects.toThrow(InvalidOptionsError);
    expect(await queue.listRepeats('rv.bad.repeat')).toEqual([]);
  });

  it('progress() refuses undefined, a BigInt and a function with InvalidJobError, and the job still completes', async () => {
    const errors: string[] = [];
    const done = deferred();
    queue.consume('rv.bad.progress', async (_payload, job) => {
      for (const value of [undefined, 1n, () => 1, Symbol('s')]) {
        try {
          await job.progress(value);
          errors.push('accepted');
        } catch (error) {
          errors.push((error as Error).name);
        }
      }
      done.resolve();
    });
    await queue.schedule('rv.bad.progress', 1);
    await done.promise;
    expect(errors).toEqual(['InvalidJobError', 'InvalidJobError', 'InvalidJobError', 'InvalidJobError']);
    await waitFor(async () => (await queue.stats('rv.bad.progress')).active === 0, 5_000, 'the ack');
  });

  it('pause()/resume() refuse a bad topic with InvalidTopicError', async () => {
    await expect(queue.pause('bad topic!')).rejects.toThrow(/topic/i);
    await expect(queue.resume('')).rejects.toThrow(/topic/i);
  });
});
