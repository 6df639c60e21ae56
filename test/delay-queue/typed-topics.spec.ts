import { defineTopic, InvalidTopicError, type JobContext } from '../../lib/index.js';
import { TokenHandler, tokenHandled, tokenHandled$ } from '../fixtures/job-event-listeners.js';
import { waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { useDelayApp } from './support/delay-test-app.js';

/**
 * `defineTopic()` tokens are their plain names at run time: what is scheduled through one is consumed
 * under the other, and every call reads the same topic. Their types are specified in
 * test/types/typed-topics.types.ts (checked by `npm run typecheck`).
 */

failOnUnhandledRejections();

describe('defineTopic()', () => {
  const t = useDelayApp({}, [TokenHandler]);

  it('refuses a name that is not a valid topic when the token is defined', () => {
    expect(() => defineTopic('has space')).toThrow(InvalidTopicError);
    expect(() => defineTopic('has space')).toThrow('(defineTopic())');
    expect(() => defineTopic('')).toThrow(InvalidTopicError);
    expect(defineTopic<{ n: number }>('typed.ok')).toEqual({ name: 'typed.ok' });
    expect(Object.isFrozen(defineTopic('typed.ok'))).toBe(true);
  });

  it('hands a job scheduled through a token to a consumer of its plain name', async () => {
    const topic = defineTopic<{ n: number }, number>('typed.token-to-name');
    const seen: Array<[unknown, string]> = [];
    const consumer = t.queue.consume('typed.token-to-name', (payload: unknown, job: JobContext) => {
      seen.push([payload, job.topic]);
    });
    try {
      const id = await t.queue.schedule(topic, { n: 1 });
      await waitFor(() => seen.length === 1, 10_000, 'the plain-name consumer to run the job');
      expect(seen).toEqual([[{ n: 1 }, 'typed.token-to-name']]);
      // Acknowledged (and not kept): gone, read through the token.
      await waitFor(async () => (await t.queue.get(topic, id)) === null, 10_000, 'the job acknowledged');
      expect(await t.queue.stats(topic)).toEqual(await t.queue.stats('typed.token-to-name'));
    } finally {
      await consumer.close();
    }
  });

  it('hands a job scheduled by plain name to an @OnDelayed handler declared through a token', async () => {
    await t.queue.schedule(tokenHandled.name, { word: 'plain' });
    await waitFor(() => tokenHandled$.length === 1, 10_000, 'the token handler to run the job');
    expect(tokenHandled$).toEqual([{ word: 'plain' }]);
  });

  it('reads, pauses and cancels the same jobs through the token and the name', async () => {
    const topic = defineTopic<string>('typed.same-jobs');
    const id = await t.queue.schedule('typed.same-jobs', 'later', { delay: 60_000 });
    expect(await t.queue.get(topic, id)).toMatchObject({ id, topic: 'typed.same-jobs', payload: 'later', state: 'scheduled' });
    expect(await t.queue.pause(topic)).toBe(true);
    expect((await t.queue.stats('typed.same-jobs')).paused).toBe(true);
    expect(await t.queue.resume('typed.same-jobs')).toBe(true);
    expect(await t.queue.reschedule(topic, id, { delay: 120_000 })).toBe(true);
    expect(await t.queue.cancel(topic, id)).toBe(true);
    expect(await t.queue.get('typed.same-jobs', id)).toBeNull();
  });
});
