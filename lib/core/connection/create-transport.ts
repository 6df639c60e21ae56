import { ioredisFlavour } from '../redis/ioredis-flavour.js';
import { IoredisTransport } from '../redis/ioredis-transport.js';
import type { ModuleTransport, TransportPolicy } from '../redis/redis-transport.js';
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
    case 'node-redis':
    case 'valkey-glide':
      throw new Error(`driver ${source.driver} not wired yet`);
  }
}
