import type { Redis, RedisOptions } from 'ioredis';
import { flavourOfClient } from '../options/transport-source.js';
import { ioredisFlavour } from './ioredis-flavour.js';
import { lockReconnectStrategy } from './lock-reconnect-strategy.js';

/**
 * `options` with `lockReconnectStrategy` when they set no `retryStrategy` (`undefined`). A
 * `retryStrategy` the user set, `null` (never reconnect) included, is kept.
 */
export function withLockReconnect<T extends RedisOptions>(options: T): T {
  return options.retryStrategy === undefined ? { ...options, retryStrategy: lockReconnectStrategy } : options;
}

/**
 * What a copy of `client` (`client.duplicate(override)`) needs to reconnect like the module's own
 * connections: `lockReconnectStrategy` when the client runs ioredis' default strategy (its options
 * never set one), nothing when it has one of its own, which the copy inherits.
 */
export function reconnectOverrideFor(client: Redis): Pick<RedisOptions, 'retryStrategy'> {
  // ioredis 5 and 6 fill unset options from this static object, so an unset strategy is its very function.
  const { Redis } = ioredisFlavour(flavourOfClient(client));
  const defaults = (Redis as unknown as { defaultOptions?: RedisOptions }).defaultOptions;
  const inherited = client.options.retryStrategy;
  return inherited !== undefined && inherited === defaults?.retryStrategy ? { retryStrategy: lockReconnectStrategy } : {};
}
