import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { useDelayInstances } from './support/delay-instances.js';
import { busiestWindow } from './support/busiest-window.js';
import { waitFor } from '../support/timing.js';

/**
 * Instances of one topic with different `rateLimit` windows share the topic's rate log, and each
 * applies its own limit against it: a narrow window's claims must not make the log forget what a
 * wide window still counts.
 */
describe('Rate limits: instances configured with different windows', () => {
  const apps = useDelayInstances('mixed-rate');

  it('each instance keeps to its own max per its own window (3 per 3000 ms beside 1 per 20 ms, both with one slot)', async () => {
    const [a, b] = await apps.start(2);
    const topic = 'mixed.rate';
    const wide = { max: 3, duration: 3000 };
    const narrow = { max: 1, duration: 20 };
    const claimsA: number[] = [];
    const claimsB: number[] = [];
    const total = 200;
    // A's handler returns once B has claimed again: A's slot frees while B's claims go on, so A asks
    // for more throughout (a claim whenever its slot frees, as a slower handler would).
    const bClaimed: Array<{ after: number; resolve: () => void }> = [];
    const onBClaim = () => {
      for (const waiter of bClaimed.splice(0)) {
        if (claimsB.length > waiter.after || claimsA.length + claimsB.length >= total) waiter.resolve();
        else bClaimed.push(waiter);
      }
    };
    await a.queue.scheduleMany(
      topic,
      Array.from({ length: total }, (_, i) => ({ payload: i })),
    );
    // A starts first and takes its first claim; then B claims beside it until the queue is empty,
    // which takes B (one claim per 20 ms at best) well past A's first window.
    a.queue.consume(
      topic,
      async (_payload, job) => {
        claimsA.push(job.claimedAt.getTime());
        const after = claimsB.length;
        await new Promise<void>((resolve) => {
          bClaimed.push({ after, resolve });
          onBClaim();
        });
      },
      { concurrency: 1, rateLimit: wide },
    );
    await waitFor(() => claimsA.length > 0, 10_000, "A's first claim");
    b.queue.consume(
      topic,
      (_payload, job) => {
        claimsB.push(job.claimedAt.getTime());
        onBClaim();
      },
      { concurrency: 1, rateLimit: narrow },
    );
    await waitFor(() => claimsA.length + claimsB.length === total, 60_000, 'every job to run');
    onBClaim();

    expect(busiestWindow(claimsA, wide.duration)).toBeLessThanOrEqual(wide.max);
    expect(busiestWindow(claimsB, narrow.duration)).toBeLessThanOrEqual(narrow.max);
    // B, whose window lets many more through, did most of the work.
    expect(claimsB.length).toBeGreaterThan(total / 2);

    // The log still forgets: no claim older than the widest window of the newest one is kept.
    const log = await apps.redis().zrangebyscore(new RedisKeySpace(a.keyPrefix).topic(topic).rateLog, 0, '+inf', 'WITHSCORES');
    const times = log.filter((_, i) => i % 2 === 1).map(Number);
    expect(times.length).toBeGreaterThan(0);
    expect(Math.max(...times) - Math.min(...times)).toBeLessThan(wide.duration * 1000);
  });
});
