import type { NodeRedisClient, NodeRedisClientOptions, NodeRedisCluster, NodeRedisClusterOptions } from './node-redis-types.js';

type Source =
  { readonly client: NodeRedisClient | NodeRedisCluster } | { readonly options: NodeRedisClientOptions | NodeRedisClusterOptions };

/** `host:port` of one node's options (from its URL or its socket), never its password. */
function describeNode(options: NodeRedisClientOptions | undefined): string {
  if (options?.url) {
    try {
      const url = new URL(options.url);
      return `${url.hostname}:${url.port || '6379'}`;
    } catch {
      return 'an unparsable URL';
    }
  }
  const socket = options?.socket;
  if (typeof socket?.path === 'string') return socket.path;
  return `${socket?.host ?? 'localhost'}:${socket?.port ?? 6379}`;
}

/** Where a node-redis connection points, for messages: `host:port`, or a cluster's root nodes. */
export function describeNodeRedisEndpoint(source: Source): string {
  const options =
    'client' in source
      ? ((source.client as Partial<NodeRedisCluster>)._options ?? (source.client as Partial<NodeRedisClient>).options)
      : source.options;
  const rootNodes = (options as Partial<NodeRedisClusterOptions> | undefined)?.rootNodes;
  if (rootNodes) return `cluster ${rootNodes.map((node) => describeNode(node)).join(', ')}`;
  return describeNode(options as NodeRedisClientOptions | undefined);
}
