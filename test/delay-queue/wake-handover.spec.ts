import type { Redis } from 'ioredis';
import type { DelayQueueService } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { rawRedis } from '../support/test-app.js';
import { watchEventLoopStalls, type EventLoopStalls } from '../support/event-loop-stalls.js';
import { sleep, waitFor } from '../support/timing.js';
import { createDelayApp, useClosedAfterEach, type DelayTestApp } from './support/delay-test-app.js';

/**
 * A producer's marker (BZPOPMIN) wakes exactly one parked consumer, which then watches the next due
 * time on its own timer; the others sleep until their idle timeout. These specs take that consumer
 * away and check that the job still runs on time: idle timeouts are 30 s here, so a job left to them
 * would be 30 s late (and a repeat tick that late counts as missed).
 */
describe('delay queue: the wake-up is not lost with the consumer that received it', () => {
  const IDLE = 30_000;
  let t: DelayTestApp;
  let queue: DelayQueueService;
  let redis: Redis;
  const { consumers, apps } = useClosedAfterEach();
  // A job's lateness less the time this process could run nothing meanwhile (a loaded CI host).
  let stalls: EventLoopStalls;
  const ownDelay = (scheduledAt: Date) => {
    const now = Date.now();
    return now - scheduledAt.getTime() - stalls.within(scheduledAt.getTime(), now);
  };

  beforeEach(async () => {
    stalls = watchEventLoopStalls();
    t = await createDelayApp();
    queue = t.queue;
    redis = rawRedis();
  });
  afterEach(async () => {
    stalls.stop();
    await t.close();
    redis.disconnect();
  });

  const blockedOnMarker = async (count: number) => {
    await waitFor(
      async () => ((await redis.client('LIST')) as string).split('\n').filter((line) => / cmd=bzpopmin/.test(line)).length >= count,
      10_000,
      `${count} connection(s) parked on the marker`,
    );
  };

  it('a consumer that closes while it watches the next due time hands the watch to another', async () => {
    const runs: Array<{ by: string; lateness: number; ownDelay: number }> = [];
    // Two instances (one handler per topic per application).
    const other = await createDelayApp({ keyPrefix: t.keyPrefix });
    apps.push(other);
    const consume = (name: string, on: DelayQueueService) => {
      const consumer = on.consume(
        'handover',
        (_payload, job) => {
          runs.push({ by: name, lateness: Date.now() - job.scheduledAt.getTime(), ownDelay: ownDelay(job.scheduledAt) });
        },
        { maxIdleWait: IDLE },
      );
      consumers.push(consumer);
      return consumer;
    };
    const first = consume('first', queue);
    await blockedOnMarker(1);
    consume('second', other.queue);
    await blockedOnMarker(2);
    // The marker goes to the connection parked longest: the first consumer's.
    await queue.schedule('handover', { n: 1 }, { delay: 2_000 });
    await sleep(500);
    await first.close();
    await waitFor(() => runs.length === 1, 10_000, 'the job to run');
    expect(runs[0].by).toBe('second');
    expect(runs[0].lateness).toBeGreaterThanOrEqual(0);
    expect(runs[0].ownDelay).toBeLessThan(2_000);
  });

  it('the consumer that ran a repeat tick learns the next tick itself, even when another took the marker', async () => {
    const every = 2_000;
    const topic = 'handover.ticks';
    const marker = new RedisKeySpace(t.keyPrefix).topic(topic).marker;
    await queue.repeat(topic, { every });
    await redis.del(marker);
    // Stands for a consumer that is woken by the next tick's marker and dies before the tick is due.
    const thief = rawRedis();
    try {
      const stolen = thief.bzpopmin(marker, IDLE / 1000);
      await blockedOnMarker(1);
      const runs: Array<{ tick: number; ownDelay: number }> = [];
      consumers.push(
        queue.consume(
          topic,
          (_payload, job) => {
            runs.push({ tick: job.scheduledAt.getTime(), ownDelay: ownDelay(job.scheduledAt) });
          },
          { maxIdleWait: IDLE },
        ),
      );
      await waitFor(() => runs.length >= 2, 4 * every + 5_000, 'two ticks to run');
      // The fault fired: the marker of the second tick went to the thief, not to the consumer.
      expect(await stolen).not.toBeNull();
      expect(runs[1].tick - runs[0].tick).toBe(every);
      for (const run of runs.slice(0, 2)) expect(run.ownDelay).toBeLessThan(1_500);
    } finally {
      thief.disconnect();
    }
  });
});
