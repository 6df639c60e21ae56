import { type JobContext } from '../../lib/index.js';
import { watchEventLoopStalls } from '../support/event-loop-stalls.js';
import { waitFor } from '../support/timing.js';
import { useFaultProxy } from '../support/use-fault-proxy.js';
import { useDelayInstances } from './support/delay-instances.js';

/*
 * A claim whose reply comes late (a link that stalls and heals, or this process stalled while the
 * reply waited) while Redis ran it on time. The consumer aims its timers at Redis's clock through an
 * estimate measured on every claim (ServerClock); taken as the midpoint of that slow round trip
 * alone, the estimate ran half the delay behind Redis, and the next job, due seconds later on a
 * healthy link, started that much late. A round trip bounds Redis's clock on both sides, and an
 * earlier, tighter sample still bounds it: the estimate keeps within them.
 */
const REPLY_DELAY_MS = 1_500;

describe('a claim whose reply comes late', () => {
  const instances = useDelayInstances('claim-reply-late');
  const proxy = useFaultProxy();

  afterEach(() => proxy.setReplyLatency(0));

  it('does not make the next job late once the link is healthy again', async () => {
    const topic = 'claim.reply-late';
    const [app] = await instances.start(1, { redis: proxy.url });
    // The own delay of a run: its lateness less the time this process could run nothing meanwhile.
    const stalls = watchEventLoopStalls();
    const runs = new Map<string, number>();
    const first = Date.now() + 600;
    const second = first + REPLY_DELAY_MS + 2_000;
    await app!.queue.schedule(topic, 'first', { at: first });
    await app!.queue.schedule(topic, 'second', { at: second });
    app!.queue.consume(
      topic,
      (payload: string, job: JobContext) => {
        const now = Date.now();
        const due = job.scheduledAt.getTime();
        runs.set(payload, now - due - stalls.within(due, now));
        if (payload !== 'first') return;
        // The claims that carry this job's acknowledgement and learn the second due time run on
        // time in Redis; their replies (those that reach the proxy in the next 1.6 s) come 1.5 s late.
        proxy.setReplyLatency(REPLY_DELAY_MS);
        setTimeout(() => proxy.setReplyLatency(0), 1_600);
      },
      { maxIdleWait: 30_000 },
    );
    await waitFor(() => runs.size === 2 || undefined, 15_000, 'both jobs to run');
    stalls.stop();
    // Before: 750 ms (half the slow round trip).
    expect(runs.get('second')).toBeLessThan(400);
  }, 30_000);
});
