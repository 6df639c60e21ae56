import type { GlideClusterClient, RouteByAddress } from '@valkey/valkey-glide';
import type { ScannedKeys } from '../redis-transport.js';
import { scanServers } from '../scan-keys.js';
import type { GlideCommandClient } from './glide-package.js';
import { glidePackage } from './glide-package.js';

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
 * master by address), at most `maxCalls` calls per server; the one bounded loop of `scanServers`.
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
  const servers = routes.map(
    (route) => (args: readonly string[]) =>
      route ? (client as GlideClusterClient).customCommand([...args], { route, decoder }) : client.customCommand([...args], { decoder }),
  );
  return scanServers(servers, pattern, maxKeys, maxCalls);
}
