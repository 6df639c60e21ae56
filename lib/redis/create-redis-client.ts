import { Cluster, Redis } from 'ioredis';
import type { RedisClient } from '../options/redis-lock-config';
import type { RedisConnectionOptions } from '../options/redis-lock-module-options.interface';

/** A client built from the options, and whether this module created it (and so must close it). */
export interface CreatedClient {
  readonly client: RedisClient;
  readonly owned: boolean;
}

/**
 * Builds the command client. Clients the module creates connect lazily so that a wrong address
 * surfaces as one clear bootstrap error (see `RedisConnection.onModuleInit`), not as a stream of
 * reconnect logs before the application has even started.
 */
export function createRedisClient(options: RedisConnectionOptions): CreatedClient {
  if (typeof options === 'string') {
    return { client: new Redis(options, { lazyConnect: true }), owned: true };
  }
  if ('client' in options) {
    return { client: options.client, owned: false };
  }
  if ('cluster' in options) {
    return { client: new Cluster(options.cluster, { lazyConnect: true, ...options.options }), owned: true };
  }
  return { client: new Redis({ lazyConnect: true, ...options }), owned: true };
}

/** Where the client points, for error messages (never includes a password). */
export function describeEndpoint(client: RedisClient): string {
  if (client instanceof Cluster) {
    const nodes = client.nodes().map((n) => `${n.options.host}:${n.options.port}`);
    return nodes.length > 0 ? `cluster [${nodes.join(', ')}]` : 'cluster';
  }
  const o = (client as Redis).options;
  return o.path ? `unix:${o.path}` : `${o.host}:${o.port}`;
}
