import { Redis } from 'ioredis';

/**
 * How many clients of the Redis at `url` are blocked in a command (a consumer's BZPOPMIN), from
 * INFO clients; on a connection of its own, closed before it resolves.
 */
export async function blockedClients(url: string): Promise<number> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await redis.connect();
    const info = await redis.info('clients');
    return Number(/^blocked_clients:(\d+)/m.exec(info)?.[1] ?? 0);
  } finally {
    redis.disconnect();
  }
}
