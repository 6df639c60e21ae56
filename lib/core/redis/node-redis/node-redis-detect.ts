import type { NodeRedisClient, NodeRedisCluster } from './node-redis-types.js';

function hasMethods(value: unknown, names: readonly string[]): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return names.every((name) => typeof record[name] === 'function');
}

/**
 * A node-redis client (`createClient()`), told apart by its shape (the package is an optional peer:
 * no `instanceof`). ioredis has no `isOpen`/`socketEpoch`, GLIDE no `sendCommand`, and a node-redis
 * cluster lists `masters`.
 */
export function isNodeRedisClient(value: unknown): value is NodeRedisClient {
  if (!hasMethods(value, ['sendCommand', 'duplicate', 'connect', 'destroy', 'sSubscribe'])) return false;
  return typeof value.isOpen === 'boolean' && typeof value.socketEpoch === 'number' && !('masters' in value);
}

/** A node-redis cluster client (`createCluster()`), told apart by its shape (see `isNodeRedisClient`). */
export function isNodeRedisCluster(value: unknown): value is NodeRedisCluster {
  if (!hasMethods(value, ['sendCommand', 'duplicate', 'connect', 'destroy', 'sSubscribe', 'nodeClient', 'getNodeClientForKey'])) {
    return false;
  }
  return typeof value.isOpen === 'boolean' && Array.isArray(value.masters);
}
