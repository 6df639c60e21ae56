import type { Logger } from '@nestjs/common';
import { RedisEvictionPolicyError } from '../errors/redis-eviction-policy.error.js';
import type { EvictionPolicyCheck } from '../options/redis-lock-module-options.interface.js';
import type { ModuleTransport } from './redis-transport.js';

/** What the check reads through: one command on every server that holds data. */
export type EveryMasterCommand = Pick<ModuleTransport, 'commandOnEveryMaster'>;

/** The only policy under which Redis never drops a key on its own (besides expiry). */
const SAFE_EVICTION_POLICY = 'noeviction';

/** What one server said about its eviction policy; `policy` is undefined when it could not be read. */
interface EvictionPolicyReading {
  readonly endpoint: string;
  readonly policy: string | undefined;
}

/**
 * Applies the `evictionPolicyCheck` option to the servers behind `servers`: 'error' throws
 * `RedisEvictionPolicyError` for the first one that may evict keys (or, when `canThrow` is false,
 * after bootstrap, logs it as an error); 'warn' logs; 'off' reads nothing. A server whose policy
 * cannot be read is a warning.
 */
export async function enforceEvictionPolicy(
  servers: readonly EveryMasterCommand[],
  options: { mode: EvictionPolicyCheck; timeoutMs: number; logger: Logger; canThrow: boolean },
): Promise<void> {
  if (options.mode === 'off') return;
  const readings = (await Promise.all(servers.map((server) => readEvictionPolicies(server, options.timeoutMs)))).flat();
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
 * Reads `maxmemory-policy` of the server behind `server`, or of every master of a cluster.
 * `CONFIG GET` first; where CONFIG is renamed or forbidden (managed services), `INFO memory`'s
 * `maxmemory_policy`; `undefined` when neither answers within `timeoutMs`.
 */
export async function readEvictionPolicies(server: EveryMasterCommand, timeoutMs: number): Promise<EvictionPolicyReading[]> {
  const configs = await server.commandOnEveryMaster(timeoutMs, 'CONFIG', 'GET', 'maxmemory-policy');
  const readings = configs.map(({ endpoint, reply }) => ({ endpoint, policy: configValue(reply, 'maxmemory-policy') }));
  if (readings.every((r) => r.policy !== undefined)) return readings;
  const infos = await server.commandOnEveryMaster(timeoutMs, 'INFO', 'memory');
  return readings.map((reading) => {
    if (reading.policy !== undefined) return reading;
    const info = infos.find((i) => i.endpoint === reading.endpoint)?.reply;
    return { endpoint: reading.endpoint, policy: typeof info === 'string' ? /^maxmemory_policy:(\S+)/m.exec(info)?.[1] : undefined };
  });
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
