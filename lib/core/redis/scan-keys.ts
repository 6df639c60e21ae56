import { isIoredisCluster } from './ioredis-flavour.js';
import type { RedisClient } from '../options/redis-lock-config.js';
import type { ScannedKeys } from './redis-transport.js';

/** Keys examined per SCAN call. */
const SCAN_COUNT = '1000';

/**
 * SCAN for keys matching a glob pattern, on every master of a cluster (a cluster client's own `scan`
 * would only ask one node). Stops once `maxKeys` keys matched or `maxCalls` calls were made per node,
 * so one dashboard refresh never walks an unbounded keyspace.
 */
export function scanKeys(client: RedisClient, pattern: string, maxKeys: number, maxCalls = 200): Promise<ScannedKeys> {
  const nodes = isIoredisCluster(client) ? client.nodes('master') : [client];
  return scanServers(
    nodes.map((node) => (args: readonly string[]) => node.call(args[0], ...args.slice(1))),
    pattern,
    maxKeys,
    maxCalls,
  );
}

/** Sends one command to one server and resolves with its reply (a SCAN reply is `[cursor, keys]` in both RESP versions). */
export type ServerCommand = (args: readonly string[]) => Promise<unknown>;

/**
 * SCAN for keys matching a glob pattern on each of `servers` (every master of a cluster), as
 * `RedisTransport.scanKeys` describes: stops once `maxKeys` keys matched, at most `maxCalls` calls
 * per server. A SCAN reply is `[cursor, keys]` in both RESP versions.
 */
export async function scanServers(
  servers: readonly ServerCommand[],
  pattern: string,
  maxKeys: number,
  maxCalls = 200,
): Promise<ScannedKeys> {
  const found = new Set<string>();
  let truncated = false;
  for (let n = 0; n < servers.length; n++) {
    let cursor = '0';
    let calls = 0;
    do {
      const [next, keys] = (await servers[n](['SCAN', cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT])) as [string, string[]];
      cursor = String(next);
      calls++;
      for (const key of keys) found.add(key);
      if (found.size >= maxKeys) {
        const more = found.size > maxKeys || cursor !== '0' || n < servers.length - 1;
        return { keys: [...found].slice(0, maxKeys), truncated: truncated || more };
      }
      if (calls >= maxCalls && cursor !== '0') {
        truncated = true; // this server's budget is spent: go on with the next one
        break;
      }
    } while (cursor !== '0');
  }
  return { keys: [...found], truncated };
}
