import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import type { RedisConnectionOptions } from './redis-lock-module-options.interface.js';
import { packageRequire } from '../runtime/build-format.js';
import type { RedisClient } from './redis-lock-config.js';
import { REDIS_DRIVERS, type RedisDriverName } from './redis-drivers.js';

/** A GLIDE server address. */
export interface GlideAddress {
  readonly host: string;
  readonly port?: number;
}

/**
 * What the transport of each driver is built from: the `redis` option read once, its driver named
 * or detected. The one place that knows the option's shapes; each transport gets only its own.
 */
export type TransportSource =
  | { readonly driver: 'ioredis' | 'iovalkey'; readonly options: RedisConnectionOptions }
  | {
      readonly driver: 'node-redis';
      /** The user's client or cluster (never closed); else `options` build one. */
      readonly client?: object;
      /** node-redis `createClient` options (`createCluster` ones when `cluster`), without `driver`. */
      readonly options?: Readonly<Record<string, unknown>>;
      readonly cluster: boolean;
    }
  | {
      readonly driver: 'valkey-glide';
      /** The user's client or cluster client (never closed); the module's own connections come from `url`/`addresses`. */
      readonly client?: object;
      readonly url?: string;
      readonly addresses?: readonly GlideAddress[];
      readonly cluster: boolean;
      /** Any other GLIDE configuration option, without `driver`, `url`, `addresses`, `clusterMode`. */
      readonly options: Readonly<Record<string, unknown>>;
    };

/**
 * Reads the `redis` option: which driver, and what its transport is built from. Refuses, with the
 * option's name, a driver that is not one of `REDIS_DRIVERS`, a client of no known driver, and a
 * GLIDE client without the address of the module's own connections.
 */
export function transportSourceOf(options: RedisConnectionOptions): TransportSource {
  if (typeof options === 'string') return { driver: 'ioredis', options };
  const given = options as Record<string, unknown>;
  if ('client' in given) return clientSource(given);
  const driver = given.driver ?? 'ioredis';
  if (typeof driver !== 'string' || !(REDIS_DRIVERS as readonly string[]).includes(driver)) {
    throw new InvalidOptionsError(
      'redis.driver',
      `got ${JSON.stringify(driver)}; expected one of ${REDIS_DRIVERS.map((d) => `'${d}'`).join(', ')}`,
    );
  }
  const { driver: _driver, ...rest } = given;
  switch (driver as RedisDriverName) {
    case 'ioredis':
    case 'iovalkey':
      return { driver: driver as 'ioredis' | 'iovalkey', options };
    case 'node-redis':
      refuseForeignKeys('node-redis', rest);
      return { driver: 'node-redis', options: rest, cluster: Array.isArray(rest.rootNodes) };
    case 'valkey-glide': {
      refuseForeignKeys('valkey-glide', rest);
      const { url, addresses, clusterMode, ...other } = rest;
      return { driver: 'valkey-glide', ...glideAddress(url, addresses, 'redis'), cluster: clusterMode === true, options: other };
    }
  }
}

/** `{ client }`: the driver is detected from the client itself. */
function clientSource(given: Record<string, unknown>): TransportSource {
  const client = given.client;
  const driver = driverOfClient(client);
  if (driver === undefined) {
    throw new InvalidOptionsError(
      'redis.client',
      'expected a client of a supported driver: an ioredis or iovalkey Redis or Cluster, a node-redis client or cluster ' +
        '(createClient / createCluster from "redis"), or a GLIDE GlideClient or GlideClusterClient',
    );
  }
  if (given.driver !== undefined && given.driver !== driver) {
    throw new InvalidOptionsError('redis.driver', `got ${JSON.stringify(given.driver)}, but redis.client is a ${driver} client`);
  }
  if (driver !== 'valkey-glide') {
    const extra = ['url', 'addresses'].find((key) => given[key] !== undefined);
    if (extra) {
      throw new InvalidOptionsError(
        `redis.${extra}`,
        `a ${driver} client is copied for the module's own connections (duplicate()); \`${extra}\` is only for a GLIDE client`,
      );
    }
  }
  switch (driver) {
    case 'ioredis':
    case 'iovalkey':
      return { driver, options: { client: client as never } };
    case 'node-redis':
      return { driver, client: client as object, cluster: isNodeRedisCluster(client) };
    case 'valkey-glide': {
      if (given.url === undefined && given.addresses === undefined) {
        throw new InvalidOptionsError(
          'redis.client',
          'a GLIDE client cannot be copied (it has no duplicate()), and the module needs connections of its own for pub/sub and ' +
            'blocking reads: pass { client, url } or { client, addresses } with the same server',
        );
      }
      return {
        driver,
        client: client as object,
        ...glideAddress(given.url, given.addresses, 'redis'),
        cluster: isGlideCluster(client),
        options: {},
      };
    }
  }
}

function glideAddress(url: unknown, addresses: unknown, option: string): { url?: string; addresses?: readonly GlideAddress[] } {
  if (url !== undefined && (typeof url !== 'string' || !/^rediss?:\/\//.test(url))) {
    throw new InvalidOptionsError(`${option}.url`, `got ${JSON.stringify(url)}; a URL must start with redis:// or rediss://`);
  }
  if (addresses === undefined) return { url: url as string | undefined };
  const valid =
    Array.isArray(addresses) &&
    addresses.length > 0 &&
    addresses.every(
      (a) => a !== null && typeof a === 'object' && typeof a.host === 'string' && (a.port === undefined || Number.isInteger(a.port)),
    );
  if (!valid) throw new InvalidOptionsError(`${option}.addresses`, 'expected a non-empty array of { host, port? }');
  if (url !== undefined) throw new InvalidOptionsError(`${option}.addresses`, 'give `url` or `addresses`, not both');
  return { addresses: addresses as GlideAddress[] };
}

/** The driver that made `client`, told from its shape (no driver package is loaded for this). */
export function driverOfClient(client: unknown): RedisDriverName | undefined {
  if (client === null || typeof client !== 'object') return undefined;
  if (isIoredisApiClient(client)) return flavourOfClient(client);
  const methods = client as Record<string, unknown>;
  if (typeof methods.customCommand === 'function' && typeof methods.close === 'function') return 'valkey-glide';
  if (typeof methods.sendCommand === 'function' && typeof methods.duplicate === 'function' && 'isOpen' in methods) return 'node-redis';
  return undefined;
}

/** A node-redis `createCluster` client (it lists its masters), as opposed to a `createClient` one. */
function isNodeRedisCluster(client: unknown): boolean {
  return Array.isArray((client as { masters?: unknown }).masters);
}

/** A GLIDE `GlideClusterClient`, as opposed to a `GlideClient`. */
function isGlideCluster(client: unknown): boolean {
  return (client as object).constructor?.name === 'GlideClusterClient';
}

/**
 * A client of either flavour: a `Redis` or `Cluster` of ioredis or iovalkey (they share the
 * constructor-free shape read here: `isCluster`, `options`, `status`, `duplicate`, `call`).
 */
export function isIoredisApiClient(value: unknown): value is RedisClient {
  if (value === null || typeof value !== 'object') return false;
  const client = value as Record<string, unknown>;
  return (
    typeof client.isCluster === 'boolean' &&
    typeof client.status === 'string' &&
    typeof client.duplicate === 'function' &&
    typeof client.call === 'function'
  );
}

/**
 * Which flavour built `client`: iovalkey when that package is installed and its classes made it,
 * else ioredis (checked without loading ioredis, which an app on another driver need not have).
 */
export function flavourOfClient(client: RedisClient): 'ioredis' | 'iovalkey' {
  let iovalkey: { Redis: abstract new (...args: never[]) => unknown; Cluster: abstract new (...args: never[]) => unknown };
  try {
    iovalkey = packageRequire('iovalkey') as typeof iovalkey;
  } catch {
    return 'ioredis';
  }
  return client instanceof iovalkey.Redis || client instanceof iovalkey.Cluster ? 'iovalkey' : 'ioredis';
}

/**
 * Settings of another driver's shape that a driver would ignore, connecting to its default address
 * instead (localhost:6379, possibly another server): refused, with what the driver takes instead.
 */
const FOREIGN_KEYS: Readonly<Record<'node-redis' | 'valkey-glide', Readonly<Record<string, string>>>> = {
  'node-redis': {
    host: 'node-redis takes `url` (or `socket: { host, port }`)',
    port: 'node-redis takes `url` (or `socket: { host, port }`)',
    cluster: 'a node-redis cluster is `rootNodes: [{ url }]`',
    addresses: 'node-redis takes `url`; a cluster is `rootNodes: [{ url }]`',
  },
  'valkey-glide': {
    host: 'GLIDE takes `url` or `addresses: [{ host, port }]`',
    port: 'GLIDE takes `url` or `addresses: [{ host, port }]`',
    cluster: 'a GLIDE cluster is `addresses` with `clusterMode: true`',
    rootNodes: 'a GLIDE cluster is `addresses` with `clusterMode: true`',
  },
};

function refuseForeignKeys(driver: 'node-redis' | 'valkey-glide', options: Readonly<Record<string, unknown>>): void {
  for (const [key, instead] of Object.entries(FOREIGN_KEYS[driver])) {
    if (options[key] !== undefined) {
      throw new InvalidOptionsError(`redis.${key}`, `the ${driver} driver has no \`${key}\` setting: ${instead}`);
    }
  }
}
