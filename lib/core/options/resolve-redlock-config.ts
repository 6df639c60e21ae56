import type { Redis } from 'ioredis';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { optionValidator as validate } from './option-validation.js';
import type { RedisLockConfig, RedlockConfig } from './redis-lock-config.js';
import type { RedisConnectionOptions, RedlockOptions, RedisLockModuleOptions } from './redis-lock-module-options.interface.js';

/**
 * Validates `redlock` (undefined when the option is absent). Lock options that only make sense on
 * one Redis are refused here, at bootstrap, rather than at the first lock call.
 */
export function resolveRedlockConfig(options: RedisLockModuleOptions, lock: RedisLockConfig['lock']): RedlockConfig | undefined {
  const value: unknown = options.redlock;
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidOptionsError('redlock', 'expected { clients: [...] } with the URLs, ioredis options or clients of the masters');
  }
  const r = value as Partial<RedlockOptions>;
  if (!Array.isArray(r.clients) || r.clients.length === 0) {
    throw new InvalidOptionsError(
      'redlock.clients',
      'expected a non-empty array of independent Redis masters (URLs, ioredis options or Redis clients); use an odd number, 3 or 5',
    );
  }
  const endpoints = new Map<string, number>();
  r.clients.forEach((client, i) => {
    const endpoint = validateMaster(`redlock.clients[${i}]`, client);
    const earlier = endpoints.get(endpoint);
    if (earlier !== undefined) {
      throw new InvalidOptionsError(
        `redlock.clients[${i}]`,
        `points at the same server as redlock.clients[${earlier}] (${endpoint}); the masters must be independent servers`,
      );
    }
    endpoints.set(endpoint, i);
  });

  const driftFactor = validate.number('redlock.driftFactor', r.driftFactor, {
    accepts: (n) => n >= 0 && n < 0.5,
    use: 'use a number from 0 to below 0.5 (default 0.01)',
    default: 0.01,
  });
  if (lock.fair) {
    throw new InvalidOptionsError('lock.fair', 'fair locks are not available in Redlock mode; remove `lock.fair` (or `redlock`)');
  }
  if (lock.syncReplicas) {
    throw new InvalidOptionsError(
      'lock.syncReplicas',
      'Redlock mode already survives the loss of a minority of masters; remove `lock.syncReplicas` (or `redlock`)',
    );
  }
  return {
    clients: [...r.clients],
    quorum: Math.floor(r.clients.length / 2) + 1,
    driftFactor,
    requestTimeout: validate.duration('redlock.requestTimeout', r.requestTimeout, { min: 1, default: 500 }),
    retryJitter: validate.duration('redlock.retryJitter', r.retryJitter, { min: 0, default: 50 }),
    retryDelay: validate.duration('redlock.retryDelay', r.retryDelay, { min: 1, default: 250 }),
  };
}

/** The `redis` connection of Redlock mode when none is given: the first master. */
export function defaultRedisForRedlock(redlock: RedlockConfig): RedisConnectionOptions {
  const first = redlock.clients[0];
  return isClientInstance(first) ? { client: first } : first;
}

/** Returns a `host:port` (or socket path) naming the server, to catch the same master listed twice. */
function validateMaster(option: string, client: unknown): string {
  if (typeof client === 'string') {
    let url: URL;
    try {
      if (!/^rediss?:\/\//.test(client)) throw new Error('bad scheme');
      url = new URL(client);
    } catch {
      throw new InvalidOptionsError(option, `got ${JSON.stringify(client)}; a URL must look like redis://host:port (or rediss://)`);
    }
    return `${url.hostname || '127.0.0.1'}:${url.port || '6379'}`;
  }
  if (client === null || typeof client !== 'object' || Array.isArray(client)) {
    throw new InvalidOptionsError(option, 'use a redis:// URL, ioredis options, or a standalone ioredis Redis client');
  }
  const isClient = isClientInstance(client);
  if (
    (client as { isCluster?: unknown }).isCluster === true ||
    (!isClient && ('cluster' in client || 'client' in client || 'sentinels' in client))
  ) {
    throw new InvalidOptionsError(
      option,
      'a Redlock master must be one standalone Redis (a URL, { host, port } options or a Redis client), not a cluster, ' +
        'a Sentinel group or a { client } wrapper; for a cluster use the `redis` option without `redlock`',
    );
  }
  if (isClient) {
    const o = (client as { options?: { host?: string; port?: number; path?: string } }).options ?? {};
    return o.path ? `unix:${o.path}` : `${o.host ?? '127.0.0.1'}:${o.port ?? 6379}`;
  }
  const o = client as { host?: string; port?: number; path?: string };
  return o.path ? `unix:${o.path}` : `${o.host ?? '127.0.0.1'}:${o.port ?? 6379}`;
}

/** An ioredis client (as opposed to plain options): it has commands and `duplicate`. */
export function isClientInstance(client: unknown): client is Redis {
  return (
    typeof client === 'object' &&
    client !== null &&
    typeof (client as { duplicate?: unknown }).duplicate === 'function' &&
    typeof (client as { evalsha?: unknown }).evalsha === 'function'
  );
}
