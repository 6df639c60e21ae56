import type { ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import type { RedisClient } from '../options/redis-lock-config.js';
import type { RedisConnectionOptions } from '../options/redis-lock-module-options.interface.js';
import { ioredisFlavour, isIoredisCluster, type IoredisFlavour } from './ioredis-flavour.js';
import { lockReconnectStrategy } from './lock-reconnect-strategy.js';
import { withLockReconnect } from './reconnect-strategy.js';

/** A client built from the options, and whether this module created it (and so must close it). */
interface CreatedClient {
  readonly client: RedisClient;
  readonly owned: boolean;
}

/**
 * Cluster retries long enough to ride out a master failover (measured 2-3.5 s with
 * `cluster-node-timeout` 1000 ms). ioredis's own defaults give up after about 1.6 s (16 redirections
 * 100 ms apart): acquires then failed and acknowledgements were lost (jobs ran twice). User options win.
 */
const CLUSTER_FAILOVER_DEFAULTS = {
  maxRedirections: 64,
  retryDelayOnFailover: 200,
  retryDelayOnClusterDown: 200,
  retryDelayOnTryAgain: 200,
} as const;

/**
 * How long a connection the module built may leave commands unanswered on an open socket before
 * it counts as unreachable (see `RedisReachability`): `unreachableTimeout`, plus the longest a
 * command of the module legitimately keeps the connection silent (WAIT of `syncReplicas`).
 */
export function silenceTimeout(unreachableTimeout: number, longestBlockingCommand = 0): number {
  return unreachableTimeout + longestBlockingCommand;
}

/**
 * ioredis settings behind `unreachableTimeout` for a connection the module builds: a TCP connect
 * that takes half the bound is given up (`connectTimeout`, ioredis' default being 10 s). A setting
 * the options already name is kept.
 */
function unreachableDefaults(options: RedisOptions, unreachableTimeout: number | false): Pick<RedisOptions, 'connectTimeout'> {
  if (unreachableTimeout === false || options.connectTimeout !== undefined) return {};
  return { connectTimeout: Math.max(50, Math.floor(unreachableTimeout / 2)) };
}

/**
 * ioredis waits `disconnectTimeout` (2 s) for a disconnected socket to close, on a referenced timer
 * that only the socket's close event clears. A connection closed while it waits to reconnect has a
 * socket that closed already: the timer then runs in full and holds the process open after the
 * application's `close()`. The module's connections have nothing left to flush when they
 * disconnect, so they wait 100 ms. A setting the options name is kept.
 */
const DISCONNECT_DEFAULTS = { disconnectTimeout: 100 } as const;

/** What `createRedisClient` needs from the module configuration. */
interface ClientPolicy {
  readonly unreachableTimeout: number | false;
}

/**
 * Builds the command client. Clients the module creates connect lazily so that a wrong address
 * surfaces as one clear bootstrap error (see `RedisConnection.onModuleInit`), not as a stream of
 * reconnect logs before the application has even started, and reconnect after a blip with
 * `lockReconnectStrategy` unless the options set a `retryStrategy`. (A cluster's node connections
 * do not reconnect on their own; ioredis refreshes the slot map instead, unchanged from 5 to 6.)
 */
export function createRedisClient(
  options: RedisConnectionOptions,
  policy: ClientPolicy = { unreachableTimeout: false },
  flavour: IoredisFlavour = ioredisFlavour('ioredis'),
): CreatedClient {
  const { Redis, Cluster } = flavour;
  const bounded = (given: RedisOptions) => unreachableDefaults(given, policy.unreachableTimeout);
  if (typeof options === 'string') {
    return {
      client: new Redis(options, { lazyConnect: true, retryStrategy: lockReconnectStrategy, ...DISCONNECT_DEFAULTS, ...bounded({}) }),
      owned: true,
    };
  }
  if ('client' in options) {
    return { client: options.client as RedisClient, owned: false };
  }
  if ('cluster' in options) {
    const { cluster, options: clusterOptions } = options as { cluster: ClusterNode[]; options?: ClusterOptions };
    return { client: new Cluster(cluster, { lazyConnect: true, ...CLUSTER_FAILOVER_DEFAULTS, ...clusterOptions }), owned: true };
  }
  // `driver` names the flavour (already chosen); `url` is the address, the rest ioredis options.
  const { driver: _driver, url, ...rest } = options as RedisOptions & { driver?: string; url?: string };
  const settings = withLockReconnect({ lazyConnect: true, ...DISCONNECT_DEFAULTS, ...bounded(rest), ...rest });
  return { client: url === undefined ? new Redis(settings) : new Redis(url, settings), owned: true };
}

/** Where the client points, for error messages (never includes a password). */
export function describeEndpoint(client: RedisClient): string {
  if (isIoredisCluster(client)) {
    const nodes = client.nodes().map((n) => `${n.options.host}:${n.options.port}`);
    return nodes.length > 0 ? `cluster [${nodes.join(', ')}]` : 'cluster';
  }
  const o = (client as Redis).options;
  if (o.sentinels?.length) {
    // host/port are ioredis defaults here, not where it connects: name the sentinels instead.
    const sentinels = o.sentinels.map((s) => `${s.host ?? '127.0.0.1'}:${s.port ?? 26379}`);
    return `sentinel master "${o.name ?? 'mymaster'}" via [${sentinels.join(', ')}]`;
  }
  return o.path ? `unix:${o.path}` : `${o.host}:${o.port}`;
}
