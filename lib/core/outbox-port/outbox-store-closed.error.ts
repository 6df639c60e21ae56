import { RedisLockError } from '../errors/redis-lock.error.js';

/**
 * The outbox store's own connection was closed by the application (for example `pool.end()` in a
 * provider's `onModuleDestroy`, which Nest runs before the library's shutdown hooks). A store throws
 * it instead of the driver's error so that the relay stops quietly: committed rows stay in the
 * outbox for another instance, or the next start, to relay.
 */
export class OutboxStoreClosedError extends RedisLockError {
  readonly code = 'OUTBOX_STORE_CLOSED';

  constructor(connection: string) {
    super(`The job outbox's relay connection (${connection}) was closed by the application; the outbox relay of this process stops.`);
  }
}
