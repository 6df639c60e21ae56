import type { Logger } from '@nestjs/common';
import { Cluster, type Redis } from 'ioredis';
import { RedisEvictionPolicyError } from '../errors/redis-eviction-policy.error.js';
import type { RedisClient } from '../options/redis-lock-config.js';
import type { EvictionPolicyCheck } from '../options/redis-lock-module-options.interface.js';
import { describeEndpoint } from './create-redis-client.js';

/** The only policy under which Redis never drops a key on its own (besides expiry). */
const SAFE_EVICTION_POLICY = 'noeviction';

/** What one server said about its eviction policy; `policy` is undefined when it could not be read. */
interface EvictionPolicyReading {
  readonly endpoint: string;
  readonly policy: string | undefined;
}

/**
 * Applies the `evictionPolicyCheck` option to the servers behind `clients`: 'error' throws
 * `RedisEvictionPolicyError` for the first one that may evict keys (or, when `canThrow` is false,
 * after bootstrap, logs it as an error); 'warn' logs; 'off' reads nothing. A server whose policy
 * cannot be read is a warning.
 */
export async function enforceEvictionPolicy(
  clients: readonly RedisClient[],
  options: { mode: EvictionPolicyCheck; timeoutMs: number; logger: Logger; canThrow: boolean },
): Promise<void> {
  if (options.mode === 'off') return;
  const readings = (await Promise.all(clients.map((client) => readEvictionPolicies(client, options.timeoutMs)))).flat();
  const unknown = unknownPolicyWarning(readings);
  if (unknown) options.logger.warn(unknown);
  const [evicting] = evictingReadings(readings);
  if (!evicting) return;
  if (options.mode === 'warn') {
    options.logger.warn(evictionPolicyWarning(evicting));
    return;
  }
  const error = new RedisEvictionPolicyError(evicting.endpoint, evicting.policy!);
  if (!options.canThrow) {
    options.logger.error(error.message);
    return;
  }
  throw error;
}

/**
 * Reads `maxmemory-policy` of the server behind `client`, or of every master of a cluster.
 * `CONFIG GET` first; where CONFIG is renamed or forbidden (managed services), `INFO memory`'s
 * `maxmemory_policy`; `undefined` when neither answers within `timeoutMs`.
 */
export async function readEvictionPolicies(client: RedisClient, timeoutMs: number): Promise<EvictionPolicyReading[]> {
  const nodes: Redis[] = client instanceof Cluster ? client.nodes('master') : [client];
  return Promise.all(nodes.map(async (node) => ({ endpoint: describeEndpoint(node), policy: await readPolicy(node, timeoutMs) })));
}

/** Readings whose policy may evict keys. */
function evictingReadings(readings: readonly EvictionPolicyReading[]): EvictionPolicyReading[] {
  return readings.filter((r) => r.policy !== undefined && r.policy !== SAFE_EVICTION_POLICY);
}

/** The warning for servers whose policy could not be read. */
function unknownPolicyWarning(readings: readonly EvictionPolicyReading[]): string | undefined {
  const unknown = readings.filter((r) => r.policy === undefined);
  if (unknown.length === 0) return undefined;
  return (
    `Could not read maxmemory-policy of Redis at ${unknown.map((r) => r.endpoint).join(', ')} (CONFIG GET and INFO memory ` +
    'are unavailable). Locks and fencing counters are only safe with maxmemory-policy noeviction: make sure it is set.'
  );
}

/** The warning for a server that may evict keys when `evictionPolicyCheck` is 'warn'. */
function evictionPolicyWarning(reading: EvictionPolicyReading): string {
  return (
    `Redis at ${reading.endpoint} runs with maxmemory-policy "${reading.policy}" (evictionPolicyCheck: 'warn'): under memory ` +
    'pressure it may evict lock keys and fencing counters, so a lock could be granted twice and a fencing token repeat. ' +
    'Set maxmemory-policy to noeviction.'
  );
}

async function readPolicy(node: Redis, timeoutMs: number): Promise<string | undefined> {
  const fromConfig = configValue(await within(node.call('CONFIG', 'GET', 'maxmemory-policy'), timeoutMs), 'maxmemory-policy');
  if (fromConfig !== undefined) return fromConfig;
  const info = await within(node.call('INFO', 'memory'), timeoutMs);
  if (typeof info === 'string') return /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
  return undefined;
}

/**
 * The value of `name` in a CONFIG GET reply, whichever shape the connection gives it: a flat
 * `[name, value]` array (RESP2, and RESP3 with ioredis 6's `replyMapping: 'legacy'`) or an object
 * `{ [name]: value }` (RESP3 with `replyMapping: 'resp3'`, where CONFIG GET answers a map).
 */
function configValue(reply: unknown, name: string): string | undefined {
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) {
      if (String(reply[i]) === name && typeof reply[i + 1] === 'string') return reply[i + 1] as string;
    }
    return undefined;
  }
  if (reply !== null && typeof reply === 'object' && !Buffer.isBuffer(reply)) {
    if (reply instanceof Map) return typeof reply.get(name) === 'string' ? (reply.get(name) as string) : undefined;
    const value = Object.hasOwn(reply, name) ? (reply as Record<string, unknown>)[name] : undefined;
    return typeof value === 'string' ? value : undefined;
  }
  return undefined;
}

/** The command's reply, or undefined when it failed or did not answer in time. */
async function within(reply: Promise<unknown>, timeoutMs: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)));
  try {
    return await Promise.race([reply.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}
