import type { Redis } from 'ioredis';
import { RedisConnectionError } from '../errors/redis-connection.error.js';
import { describeEndpoint } from './create-redis-client.js';

/**
 * ioredis sends `SELECT <db>` when it connects; a refusal (an index beyond the server's
 * `databases`, a SELECT the ACL denies) is only emitted as an 'error' event and the connection
 * stays on database 0, where every key would then be written. This records the last refusal
 * (the client re-selects on each reconnect) so that the bootstrap can fail on it.
 */
export class SelectedDatabaseCheck {
  private selectError?: Error;

  constructor(private readonly client: Redis) {
    client.on('error', (error: Error & { command?: { name?: string } }) => {
      if (error.command?.name === 'select') this.selectError = error;
    });
    // 'connect' comes before the handshake that sends SELECT: a new connection's answer replaces the last.
    client.on('connect', () => (this.selectError = undefined));
  }

  /**
   * Throws `RedisConnectionError` naming the database and the cause when the connection is not on
   * the database it was configured with. A refusal seen before this class listened (a client
   * passed in that had connected already) is found with `CLIENT INFO` (Redis >= 6.2; skipped
   * where the server or its ACL refuses that command).
   */
  async verify(timeoutMs: number): Promise<void> {
    const wanted = this.client.options.db ?? 0;
    if (wanted === 0) return;
    let cause = this.selectError?.message;
    if (!cause) {
      const actual = await this.currentDatabase(timeoutMs);
      if (actual === undefined || actual === wanted) return;
      cause = `the connection is on database ${actual}`;
    }
    throw new RedisConnectionError(
      `Redis at ${describeEndpoint(this.client)} refused database ${wanted}: ${cause.replace(/\.+$/, '')}. ` +
        "Check the database index in the `redis` option (the URL path or `db`) against the server's `databases` setting.",
      this.selectError,
    );
  }

  private async currentDatabase(timeoutMs: number): Promise<number | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const info = await Promise.race([
        this.client.call('CLIENT', 'INFO') as Promise<unknown>,
        new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs))),
      ]);
      const match = typeof info === 'string' ? /(?:^| )db=(\d+)/.exec(info) : null;
      return match ? Number(match[1]) : undefined;
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
