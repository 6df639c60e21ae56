import { InvalidOptionsError } from '../../errors/invalid-options.error.js';
import type { NodeRedisClient, NodeRedisClientOptions, NodeRedisCluster, NodeRedisClusterOptions } from './node-redis-types.js';

/**
 * Refuses, at construction, a node-redis connection with a `keyPrefix` (node-redis 6.3 has one, on
 * a client or on a cluster): node-redis applies it to its typed commands only, never to
 * `sendCommand`, which is all this module sends, so the module's keys would silently live outside
 * the prefix the application chose, and a copy for the application's own commands would see keys
 * the module's do not. As for ioredis, namespacing is the module's own `keyPrefix` option.
 *
 * The rest of a client's settings are fine as they are: a `typeMapping` and the RESP version are
 * overridden per command (see node-redis-replies.ts), and a `commandOptions.timeout` applies only
 * to a command still waiting to be written.
 */
export function assertSupportedNodeRedisOptions(
  source: { readonly client: NodeRedisClient | NodeRedisCluster } | { readonly options: NodeRedisClientOptions | NodeRedisClusterOptions },
): void {
  const given = 'client' in source;
  const options: Record<string, unknown> | undefined =
    'client' in source
      ? ((source.client as Partial<NodeRedisCluster>)._options ?? (source.client as Partial<NodeRedisClient>).options)
      : source.options;
  const defaults = (options as Partial<NodeRedisClusterOptions> | undefined)?.defaults;
  const prefix = options?.keyPrefix || defaults?.keyPrefix;
  if (!prefix) return;
  const option = given ? 'redis.client' : options?.keyPrefix ? 'redis.keyPrefix' : 'redis.defaults.keyPrefix';
  throw new InvalidOptionsError(
    option,
    `the node-redis connection prefixes keys with ${JSON.stringify(String(prefix))}, but only in its typed commands: the raw ` +
      'commands this module sends would not be prefixed, so its keys would lie outside that namespace. Namespace with this ' +
      "module's own `keyPrefix` option instead; to keep the prefix for your own commands, give this module a copy without " +
      'it: `client.duplicate({ keyPrefix: undefined })`',
  );
}
