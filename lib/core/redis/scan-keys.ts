import { isIoredisCluster } from './ioredis-flavour.js';
import type { RedisClient } from '../options/redis-lock-config.js';
import type { ScannedKeys } from './redis-transport.js';

/** Keys examined per SCAN call. */
const SCAN_COUNT = 1000;

/**
 * SCAN for keys matching a glob pattern, on every master of a cluster (a cluster client's own `scan`
 * would only ask one node). Stops once `maxKeys` keys matched or `maxCalls` calls were made per node,
 * so one dashboard refresh never walks an unbounded keyspace.
 */
export async function scanKeys(client: RedisClient, pattern: string, maxKeys: number, maxCalls = 200): Promise<ScannedKeys> {
  const nodes = isIoredisCluster(client) ? client.nodes('master') : [client];
  const found = new Set<string>();
  let truncated = false;
  for (let n = 0; n < nodes.length; n++) {
    let cursor = '0';
    let calls = 0;
    do {
      const [next, keys] = await nodes[n].scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
      cursor = next;
      calls++;
      for (const key of keys) found.add(key);
      if (found.size >= maxKeys) {
        const more = found.size > maxKeys || cursor !== '0' || n < nodes.length - 1;
        return { keys: [...found].slice(0, maxKeys), truncated: truncated || more };
      }
      if (calls >= maxCalls && cursor !== '0') {
        truncated = true; // this node's budget is spent: go on with the next one
        break;
      }
    } while (cursor !== '0');
  }
  return { keys: [...found], truncated };
}
