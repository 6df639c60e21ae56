import { startLocalRedisServer, type LocalRedisServer, type LocalRedisServerOptions } from '../../lib/testing/local-redis-server.js';
import { useResource } from './use-resource.js';

/** A private redis-server for a describe block (`useResource`): started before its tests, stopped after them. */
export function useLocalRedisServer(options: LocalRedisServerOptions = {}): LocalRedisServer {
  return useResource('the Redis server', () => startLocalRedisServer(options), (server) => server.stop());
}
