import { RedisLockError } from '../errors/redis-lock.error.js';
import { errorMessage } from '../errors/error-message.js';

/**
 * The transactional outbox's database could not be reached when the application started (or did not
 * answer in time). Bootstrap fails with it before anything is taken: no lock lease, no leadership, no
 * job is claimed by an application whose outbox is not ready. The driver's error is its `cause`.
 */
export class OutboxUnavailableError extends RedisLockError {
  readonly code = 'OUTBOX_UNAVAILABLE';

  constructor(
    /** The outbox store, as named in the message (`PostgresJobOutbox`, table `redis_lock_job_outbox`). */
    readonly store: string,
    /** Where the database was looked for (`host:port`, a socket path), when it can be told. */
    readonly address: string | undefined,
    /** The relay connection the store was given (`pg Pool`, `TypeORM DataSource`, …). */
    readonly connection: string,
    cause: unknown,
  ) {
    const where = address === undefined ? '' : ` at ${address}`;
    super(
      `The transactional outbox (${store}) cannot reach its database${where} through its relay connection (${connection}): ` +
        `${causeOf(cause)}. Check that PostgreSQL is running and accepts connections${where}, and the host, port, ` +
        'user, password and database of the connection given to the outbox. The application was not started: ' +
        'no lock, leadership or job was taken.',
      { cause },
    );
  }
}

/**
 * The driver's error in a few words. A connection to a host name with several addresses (`localhost`:
 * ::1 and 127.0.0.1) fails with an `AggregateError` whose own message is empty: its errors' are used.
 */
function causeOf(error: unknown): string {
  const message = errorMessage(error);
  if (message === '' && error instanceof AggregateError) return error.errors.map((e: unknown) => errorMessage(e)).join('; ');
  return message || 'no answer';
}
