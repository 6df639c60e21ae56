import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../core/options/redis-lock-config.js';

/** Keys examined per SCAN call. */
const SCAN_COUNT = 1000;

/**
 * Deletes every key a module with `keyPrefix` writes (`<prefix>:lock:{…}`, `:sem:{…}`, `:dq:{…}`,
 * see RedisKeySpace) on every master the client reaches, and returns how many were deleted.
 *
 * The patterns end in the hash tag's `{`, which no prefix may contain: prefix `a` never matches
 * the keys of prefix `a:b`. One UNLINK per key: on a cluster, keys of different slots cannot
 * share a command even on one node.
 */
export async function removeKeysUnderPrefix(client: RedisClient, keyPrefix: string): Promise<number> {
  // A cluster client lists its masters once it is ready; before that, only the startup nodes.
  await client.ping();
  const nodes: Redis[] = client instanceof Cluster ? client.nodes('master') : [client];
  const patterns = ['lock', 'sem', 'dq'].map((kind) => `${escapeGlob(keyPrefix)}:${kind}:{*`);
  let removed = 0;
  for (const node of nodes) {
    for (const pattern of patterns) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        cursor = next;
        if (keys.length === 0) continue;
        const pipeline = node.pipeline();
        for (const key of keys) pipeline.unlink(key);
        for (const [error, count] of (await pipeline.exec()) ?? []) {
          if (error) throw error;
          removed += Number(count);
        }
      } while (cursor !== '0');
    }
  }
  return removed;
}

function escapeGlob(literal: string): string {
  return literal.replace(/[*?[\]\\]/g, (ch) => `\\${ch}`);
}
