import type { GlideClusterClient, RouteByAddress } from '@valkey/valkey-glide';
import type { ScannedKeys } from '../redis-transport.js';
import type { GlideCommandClient } from './glide-package.js';
import { glidePackage } from './glide-package.js';

/** Keys examined per SCAN call (as the ioredis transport). */
const SCAN_COUNT = 1000;

/** A master of a cluster, as GLIDE routes to it. */
export interface GlideMaster {
  readonly endpoint: string;
  readonly route: RouteByAddress;
}

/** Every master of the cluster, from CLUSTER SLOTS (each slot range's first node is its master). */
export async function clusterMasters(client: GlideClusterClient): Promise<GlideMaster[]> {
  const ranges = (await client.customCommand(['CLUSTER', 'SLOTS'], {
    route: 'randomNode',
    decoder: glidePackage().Decoder.String,
  })) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>;
  const masters = new Map<string, GlideMaster>();
  for (const [, , [host, port]] of ranges) {
    const endpoint = `${host}:${port}`;
    if (!masters.has(endpoint)) masters.set(endpoint, { endpoint, route: { type: 'routeByAddress', host, port: Number(port) } });
  }
  return [...masters.values()];
}

/**
 * SCAN for keys matching a glob pattern, on every master of a cluster (each SCAN routed to one
 * master by address), at most `maxCalls` calls per server; as the ioredis transport's `scanKeys`.
 */
export async function scanKeysOn(
  client: GlideCommandClient,
  isCluster: boolean,
  pattern: string,
  maxKeys: number,
  maxCalls = 200,
): Promise<ScannedKeys> {
  const routes = isCluster ? (await clusterMasters(client as GlideClusterClient)).map((master) => master.route) : [undefined];
  const decoder = glidePackage().Decoder.String;
  const found = new Set<string>();
  let truncated = false;
  for (let n = 0; n < routes.length; n++) {
    let cursor = '0';
    let calls = 0;
    do {
      const args = ['SCAN', cursor, 'MATCH', pattern, 'COUNT', String(SCAN_COUNT)];
      const route = routes[n];
      const reply = (route
        ? await (client as GlideClusterClient).customCommand(args, { route, decoder })
        : await client.customCommand(args, { decoder })) as unknown as [string, string[]];
      cursor = String(reply[0]);
      calls++;
      for (const key of reply[1]) found.add(key);
      if (found.size >= maxKeys) {
        const more = found.size > maxKeys || cursor !== '0' || n < routes.length - 1;
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
