import type { Redis } from 'ioredis';
import type { RedisClient } from '../options/redis-lock-config.js';
import { closeQuietly } from './close-quietly.js';
import { describeEndpoint } from './create-redis-client.js';
import { isIoredisCluster } from './ioredis-flavour.js';
import type { EveryMasterCommand } from './eviction-policy-check.js';
import type { ScratchConnection, ServerReply } from './redis-transport.js';
import { scanKeys } from './scan-keys.js';

/** How long one command of a scratch connection may take before it fails. */
const SCRATCH_COMMAND_TIMEOUT_MS = 5_000;

/**
 * One command on the one server, or on each master of a cluster (its slot map loaded first); a
 * server that fails or does not answer within `timeoutMs` gets an `error`, never a rejection.
 */
export async function commandOnEveryMaster<T>(
  client: RedisClient,
  timeoutMs: number,
  name: string,
  ...args: Array<string | number>
): Promise<Array<ServerReply<T>>> {
  const nodes: Redis[] = isIoredisCluster(client) ? client.nodes('master') : [client];
  return Promise.all(
    nodes.map(async (node): Promise<ServerReply<T>> => {
      const endpoint = describeEndpoint(node);
      try {
        return { endpoint, reply: await within(node.call(name, ...args) as Promise<T>, timeoutMs) };
      } catch (error) {
        return { endpoint, error: error instanceof Error ? error : new Error(String(error)) };
      }
    }),
  );
}

/** The command's reply, or a rejection when it failed or did not answer within `timeoutMs`. */
async function within<T>(reply: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([reply, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A copy of `client` that connects now, queues commands until it is ready, fails a command after a
 * few seconds instead of waiting for a server that is gone, and does not reconnect once the
 * server is down (see `ModuleTransport.openScratch`).
 */
export function openIoredisScratch(client: RedisClient): ScratchConnection {
  const settings = { lazyConnect: false, enableOfflineQueue: true };
  const copy: RedisClient = isIoredisCluster(client)
    ? client.duplicate([], {
        ...settings,
        clusterRetryStrategy: () => null,
        redisOptions: { ...client.options.redisOptions, commandTimeout: SCRATCH_COMMAND_TIMEOUT_MS },
      })
    : client.duplicate({ ...settings, commandTimeout: SCRATCH_COMMAND_TIMEOUT_MS, maxRetriesPerRequest: 1, retryStrategy: () => null });
  // Its failures reach the caller through the commands' rejections; no "Unhandled error event" noise.
  copy.on('error', () => undefined);
  return {
    scanKeys: async (pattern, maxKeys, maxCalls) => {
      // A cluster client lists its masters once it is ready; before that, only the startup nodes.
      await copy.ping();
      return scanKeys(copy, pattern, maxKeys, maxCalls);
    },
    command: <T>(name: string, ...args: Array<string | number>) => copy.call(name, ...args) as Promise<T>,
    close: () => closeQuietly(copy),
  };
}

/** `client` as the eviction check reads servers: one command on each of its masters. */
export function everyMasterOf(client: RedisClient): EveryMasterCommand {
  return { commandOnEveryMaster: (timeoutMs, name, ...args) => commandOnEveryMaster(client, timeoutMs, name, ...args) };
}
