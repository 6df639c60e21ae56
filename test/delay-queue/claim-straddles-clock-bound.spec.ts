import { RedisLockEvents, type JobContext } from '../../lib/index.js';
import { watchEventLoopStalls } from '../support/event-loop-stalls.js';
import { sleep, waitFor } from '../support/timing.js';
import { useDelayInstances } from './support/delay-instances.js';

/*
 * Found by the outside review of the consumer clock (ServerClock). The consumer's tightest bound on
 * Redis's clock came from its first claim (at consume(), a fast loopback round trip); the next claim
 * left 29.4 s later, at the job's due time (nothing else wakes the loop: maxIdleWait 60 s), and Redis
 * ran it 1.5 s late (CLIENT PAUSE, as a busy server or a failover's pause of the old master): its own
 * bound was looser, so the clock kept the first one, which expired (30 s) before the reply came.
 * The clock then had no upper bound: the claim's visibility started at -Infinity, its job was handed
 * back as lost on arrival and claimed again, and with a rate limit (the hand-back does not give the
 * claim's share back) it ran 11.4 s late; the estimate itself was +Infinity (job.started's latenessMs).
 * The latest sample now always bounds the clock.
 */
const PAUSE_MS = 1_500;

describe('a claim Redis runs late just as the clock’s tightest bound expires', () => {
  const instances = useDelayInstances('claim-straddle');

  it('runs its job on its first attempt, within the pause, with a finite lateness', async () => {
    const topic = 'claim.straddle';
    const [app] = await instances.start(1, { delayQueue: { maxAttempts: 1 } });
    const latenesses: number[] = [];
    app!.app.get(RedisLockEvents).on('job.started', (event) => void latenesses.push(event.latenessMs));
    // A run's lateness less the time this process could run nothing meanwhile (a loaded CI host).
    const stalls = watchEventLoopStalls();
    const runs: Array<{ attempt: number; late: number }> = [];
    const dueAt = Date.now() + 29_400;
    const id = await app!.queue.schedule(topic, { n: 1 }, { at: dueAt });
    app!.queue.consume(
      topic,
      (_payload: unknown, job: JobContext) => {
        const due = job.scheduledAt.getTime();
        runs.push({ attempt: job.attempt, late: Date.now() - due - stalls.within(due, Date.now()) });
      },
      { visibilityTimeout: 5_000, maxIdleWait: 60_000, rateLimit: { max: 1, duration: 10_000 } },
    );
    // A 29 s wait is the scenario: the first claim's bound must be nearly 30 s old at this claim.
    await sleep(dueAt - Date.now() - 100);
    await instances.redis().call('CLIENT', 'PAUSE', String(PAUSE_MS), 'ALL');
    await waitFor(async () => (await app!.queue.get(topic, id)) === null || undefined, 20_000, 'the acknowledgement', {
      every: 100,
      retryErrors: true,
    });
    stalls.stop();
    expect(runs.map((run) => run.attempt)).toEqual([1]);
    // The pause (1.5 s) and a round trip; before: 11.4 s (the next rate window).
    expect(runs[0]!.late).toBeLessThan(PAUSE_MS + 1_000);
    expect(latenesses.every(Number.isFinite)).toBe(true);
  }, 60_000);
});
