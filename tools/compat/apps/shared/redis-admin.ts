/**
 * The checks' own view of the Redis server, through node-redis (an app of the drivers lane has no
 * ioredis): the keys under a prefix, and how many client connections the server has.
 */
import { createClient } from 'redis';

export interface RedisAdmin {
  keysUnder(prefix: string): Promise<string[]>;
  removeKeys(prefix: string): Promise<void>;
  /** The connections the server counts now (CLIENT LIST), this admin connection included. */
  connectionCount(): Promise<number>;
  close(): void;
}

export async function openRedisAdmin(url: string): Promise<RedisAdmin> {
  const client = createClient({ url });
  client.on('error', () => undefined); // a failure shows in the next command's rejection
  await client.connect();
  const keysUnder = async (prefix: string): Promise<string[]> => {
    const keys: string[] = [];
    for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) keys.push(...batch);
    return keys;
  };
  return {
    keysUnder,
    async removeKeys(prefix) {
      const keys = await keysUnder(prefix);
      if (keys.length > 0) await client.del(keys);
    },
    async connectionCount() {
      const list = String(await client.sendCommand(['CLIENT', 'LIST']));
      return list.split('\n').filter((line) => line.trim() !== '').length;
    },
    close() {
      client.destroy();
    },
  };
}
