import type { Redis } from 'ioredis';
import { isIoredisCluster } from './ioredis-flavour.js';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import type { RedisClient } from '../options/redis-lock-config.js';

/**
 * Where a connection's settings came from, for error messages: a client instance the user passed
 * in (`redis.client`, `redlock.clients[1]`), or options the module built it from (`redis`,
 * `redis.options` of a cluster, `redlock.clients[1]`), whose setting is then named in full.
 */
interface ClientOrigin {
  readonly option: string;
  readonly instance: boolean;
}

/**
 * Refuses, at bootstrap, a connection whose settings make this library misread replies or miss
 * its own keys. Every RESP setting is accepted: `protocol: 2`, and `protocol: 3` with either
 * `replyMapping` give the library the same values (see docs/redis-protocols.md). Refused:
 *
 * - `stringNumbers: true`: every integer reply arrives as a string, so a granted lock (`1`) would
 *   read as refused and counts would be concatenated;
 * - `keyPrefix`: ioredis prefixes the keys of commands but not pub/sub channels, so the release
 *   messages scripts publish (to a channel passed as a key) never reach the waiters, who then wait
 *   for the holder's lease to end; the module's own `keyPrefix` option is the way to namespace.
 */
export function assertSupportedClientOptions(client: RedisClient, origin: ClientOrigin): void {
  if (isIoredisCluster(client)) {
    const node = client.options.redisOptions ?? {};
    const topPrefix = Boolean(client.options.keyPrefix);
    check(origin, {
      stringNumbers: node.stringNumbers === true,
      keyPrefix: client.options.keyPrefix || node.keyPrefix,
      // A cluster built from options: its node settings sit under `redis.options.redisOptions`.
      path: (setting) => (setting === 'keyPrefix' && topPrefix ? `${origin.option}.keyPrefix` : `${origin.option}.redisOptions.${setting}`),
      copy: (setting) =>
        setting === 'keyPrefix'
          ? "cluster.duplicate([], { keyPrefix: '', redisOptions: { ...cluster.options.redisOptions, keyPrefix: '' } })"
          : 'cluster.duplicate([], { redisOptions: { ...cluster.options.redisOptions, stringNumbers: false } })',
    });
    return;
  }
  const options = (client as Redis).options;
  check(origin, {
    stringNumbers: options.stringNumbers === true,
    keyPrefix: options.keyPrefix,
    path: (setting) => `${origin.option}.${setting}`,
    copy: (setting) => (setting === 'keyPrefix' ? "client.duplicate({ keyPrefix: '' })" : 'client.duplicate({ stringNumbers: false })'),
  });
}

function check(
  origin: ClientOrigin,
  found: { stringNumbers: boolean; keyPrefix: unknown; path(setting: string): string; copy(setting: string): string },
): void {
  const name = (setting: string) => (origin.instance ? origin.option : found.path(setting));
  if (found.stringNumbers) {
    throw new InvalidOptionsError(
      name('stringNumbers'),
      'the connection runs with `stringNumbers: true`, which makes Redis integers arrive as strings, and this library ' +
        'reads integer replies of its scripts (a granted lock would look refused). Leave `stringNumbers` unset here; ' +
        `to keep it for your own commands, give this module a copy without it: \`${found.copy('stringNumbers')}\``,
    );
  }
  if (found.keyPrefix) {
    throw new InvalidOptionsError(
      name('keyPrefix'),
      `the connection prefixes keys with ${JSON.stringify(String(found.keyPrefix))} but not pub/sub channels, so lock ` +
        "waiters would never hear a release. Namespace with this module's own `keyPrefix` option instead; to keep the " +
        `prefix for your own commands, give this module a copy without it: \`${found.copy('keyPrefix')}\``,
    );
  }
}

/** Where `config.redis` got its settings (see `ClientOrigin`). */
export function redisOptionOrigin(redis: unknown): ClientOrigin {
  if (redis !== null && typeof redis === 'object') {
    if ('client' in redis) return { option: 'redis.client', instance: true };
    if ('cluster' in redis) return { option: 'redis.options', instance: false };
  }
  return { option: 'redis', instance: false };
}
