import { ioredisFlavour } from '../redis/ioredis-flavour.js';
import { NodeRedisTransport } from '../redis/node-redis/node-redis-transport.js';
import type { NodeRedisClient } from '../redis/node-redis/node-redis-types.js';
import { IoredisTransport } from '../redis/ioredis-transport.js';
import type { ModuleTransport, TransportPolicy } from '../redis/redis-transport.js';
import { glideTransportSource } from '../redis/valkey-glide/glide-source.js';
import { GlideTransport } from '../redis/valkey-glide/glide-transport.js';
import type { TransportSource } from '../options/transport-source.js';

/**
 * The transport of the driver the `redis` option names (or whose client it passes): the one place
 * that maps a driver to its transport class. A driver's package is loaded here, on first use, so
 * an application installs only the driver it uses (see driver-packages.ts).
 */
export function createTransport(source: TransportSource, policy: TransportPolicy): ModuleTransport {
  switch (source.driver) {
    case 'ioredis':
    case 'iovalkey':
      return new IoredisTransport(source.options, policy, ioredisFlavour(source.driver));
    case 'valkey-glide':
      return new GlideTransport(glideTransportSource(source), policy);
    case 'node-redis':
      return new NodeRedisTransport(
        source.client ? { client: source.client as NodeRedisClient } : { options: source.options ?? {}, cluster: source.cluster },
        policy,
      );
  }
}
