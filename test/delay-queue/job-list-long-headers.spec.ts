import { TopicInspector } from '../../lib/delay-queue/topic-inspector.js';
import type { JobContext } from '../../lib/index.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { waitFor } from '../support/timing.js';
import { useDelayApp } from './support/delay-test-app.js';

/*
 * A job list reads every header whole, however long its fields are as stored: a failure is
 * [message (2000 characters), stack (8000)] as escaped JSON, up to 6 bytes a control character, and
 * progress is up to MAX_PROGRESS_BYTES of JSON escaped again. Only the payload is cut to a preview.
 */
describe('a job list over jobs whose headers are long', () => {
  const t = useDelayApp({ delayQueue: { maxAttempts: 1 } });
  beforeAll(() => muteNestLogger('warn', 'error')); // dead letters on purpose

  /** Runs one job of `topic` through `handler` until it is dead, and answers its id. */
  async function deadJob(topic: string, payload: unknown, handler: (job: JobContext) => Promise<void>): Promise<string> {
    const id = await t.queue.schedule(topic, payload);
    const consumer = t.queue.consume(topic, (_payload, job) => handler(job));
    try {
      await waitFor(async () => (await t.queue.get(topic, id))?.state === 'dead' || undefined, 10_000, 'the dead letter');
    } finally {
      await consumer.close();
    }
    return id;
  }

  it('lists a dead job whose error holds control characters with its attempts and its whole error, as get() reads it', async () => {
    const topic = 'long.header.nul';
    // A message quoting a NUL-padded fixed-width record (each NUL is 6 bytes as JSON: \u0000), with a cause.
    const text = `Bad record from the device: 'ACME-42${'\u0000'.repeat(3000)}'`;
    const id = await deadJob(topic, { n: 1 }, () => Promise.reject(new Error(text, { cause: new Error(text) })));
    const got = (await t.queue.get(topic, id))!;
    expect(got).toMatchObject({ state: 'dead', attempts: 1 });
    expect(got.lastError).toContain('ACME-42\u0000\u0000');
    expect(got.lastErrorStack!.length).toBeGreaterThan(5000); // with the message: over 40 kB as escaped JSON

    const listed = await t.app.get(TopicInspector).listJobs(topic, 'dead', 10, 100);
    expect(listed.jobs).toEqual([
      expect.objectContaining({ id, attempts: 1, createdAt: got.createdAt.getTime(), lastError: got.lastError, payloadPreview: '{"n":1}' }),
    ]);
    expect(await t.queue.deadLetters(topic)).toMatchObject([
      { id, attempts: 1, lastError: got.lastError, lastErrorStack: got.lastErrorStack },
    ]);
  }, 20_000);

  it('lists the largest progress (escaped again) beside such an error, and still sends only a preview of a large payload', async () => {
    const topic = 'long.header.progress';
    // 8190 bytes as JSON, every character a quote: about twice that once stored as a JSON string.
    const progress = '"'.repeat(4094);
    const payload = { blob: 'x'.repeat(100_000) };
    const text = `Bad record: ${'\u0001'.repeat(2500)}`;
    const id = await deadJob(topic, payload, async (job) => {
      await job.progress(progress);
      throw new Error(text);
    });
    const got = (await t.queue.get(topic, id))!;
    expect(got).toMatchObject({ state: 'dead', attempts: 1, progress });

    const listed = await t.app.get(TopicInspector).listJobs(topic, 'dead', 10, 100);
    expect(listed.jobs).toEqual([
      expect.objectContaining({
        id,
        attempts: 1,
        createdAt: got.createdAt.getTime(),
        lastError: got.lastError,
        progress,
        payloadPreview: `${JSON.stringify(payload).slice(0, 100)}…`,
        payloadLength: JSON.stringify(payload).length,
      }),
    ]);
  }, 20_000);
});
