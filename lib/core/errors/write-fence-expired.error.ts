import { RedisLockError } from './redis-lock.error.js';

/**
 * A fenced write of an outbox row reached Redis after its claim's deadline (held by a stalled link,
 * or re-sent after a reconnection) and changed nothing; the row is left to the relay, which writes
 * it again under a new claim. Reported as the `error` of `outbox.relay.failed` for that row.
 */
export class WriteFenceExpiredError extends RedisLockError {
  readonly code = 'WRITE_FENCE_EXPIRED';

  constructor() {
    super("The write reached Redis after its claim's deadline and changed nothing; the row is left to the relay.");
  }
}
