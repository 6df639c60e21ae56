import type { Redis } from 'ioredis';
import type { DelayQueueService } from '../../../lib/index.js';
import { RedisKeySpace } from '../../../lib/core/keys/redis-key-space.js';
import { waitFor } from '../../support/timing.js';

/**
 * Resolves once a consumer of `topic` has taken the wake-up marker twice: it claimed (and found
 * nothing to take) after the first. Schedules a far-off probe job before each wake-up, through `queue`.
 */
export async function consumerLookedTwice(redis: Redis, queue: DelayQueueService, keyPrefix: string, topic: string): Promise<void> {
  const marker = new RedisKeySpace(keyPrefix).topic(topic).marker;
  for (let i = 0; i < 2; i++) {
    await queue.schedule(topic, `probe-${i}`, { delay: 60_000 + i });
    await redis.zadd(marker, 0, 'wake');
    await waitFor(async () => (await redis.exists(marker)) === 0, 5_000, 'a consumer to take the wake-up');
  }
}
