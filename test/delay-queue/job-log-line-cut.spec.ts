import { waitFor } from '../support/timing.js';
import { useDelayInstances } from './support/delay-instances.js';

/**
 * A log line longer than its bound (JOB_LOG_MAX_LINE_LENGTH UTF-16 units) is cut at a character
 * boundary: a character outside the BMP across the bound is left out whole, never split into a lone
 * surrogate that Redis would store as U+FFFD.
 */
describe('a log line cut to its bound', () => {
  const instances = useDelayInstances('log-cut');

  it('never ends in a replacement character the handler did not log', async () => {
    const [t] = await instances.start(1);
    const topic = 'log-cut';
    const logged = 'a'.repeat(1999) + '😀' + ' and more';
    t.queue.consume(topic, (_payload, job) => job.log(logged), { keepCompleted: { count: 10 } });
    const id = await t.queue.schedule(topic, 1);
    await waitFor(async () => (await t.queue.get(topic, id))?.state === 'completed', 5_000, 'the job to complete');
    const [line] = await t.queue.logs(topic, id);
    expect(line).toBe('a'.repeat(1999));
  });
});
