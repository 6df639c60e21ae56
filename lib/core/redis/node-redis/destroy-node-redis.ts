import { isNodeRedisCluster } from './node-redis-detect.js';
import type { NodeRedisClient, NodeRedisCluster } from './node-redis-types.js';

/**
 * Closes a node-redis client or cluster at once (`destroy()`: commands not answered are rejected),
 * also one whose connect is under way. node-redis 6.3 finishes a connect that `destroy()` caught
 * before its first I/O and leaves its socket open (`isOpen` false, `isReady` true), which keeps the
 * process alive: such a connection is destroyed again as soon as that connect completes. Not
 * enough for a cluster: one destroyed as its connect began keeps its node connections (3 on a
 * 3-master cluster, seen in a probe); destroying it again on 'connect' does not close them, only
 * a destroy after its connect() settled does (the callers do not pass that promise yet).
 */
export function destroyNodeRedis(connection: NodeRedisClient | NodeRedisCluster): void {
  destroyOnce(connection);
  connection.once(isNodeRedisCluster(connection) ? 'connect' : 'ready', () => destroyOnce(connection));
}

function destroyOnce(connection: NodeRedisClient | NodeRedisCluster): void {
  try {
    connection.destroy();
  } catch {
    // Never opened, or closed already.
  }
}
