import { isIoredisCluster } from './ioredis-flavour.js';
import type { RedisClient } from '../options/redis-lock-config.js';
import type { RedisScript } from './redis-script.js';

/**
 * Loads scripts into the script cache (every master of a cluster) ahead of their first use, so a
 * first burst of calls does not all miss with NOSCRIPT and fall back to sending the body. Purely an
 * optimisation: `RedisScript.run` recovers from NOSCRIPT by itself (restart, failover, flush).
 */
export async function preloadScripts(client: RedisClient, scripts: readonly RedisScript[]): Promise<void> {
  const nodes = isIoredisCluster(client) ? client.nodes('master') : [client];
  await Promise.all(nodes.flatMap((node) => scripts.map((script) => node.script('LOAD', script.source))));
}
