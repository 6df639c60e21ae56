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

/** Every key of one server (or cluster node) matching `pattern`, by SCAN. */
export async function scanKeys(node: Pick<Redis, 'scan'>, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}
