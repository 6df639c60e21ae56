import { isIoredisCluster } from './ioredis-flavour.js';
import type { RedisClient } from '../options/redis-lock-config.js';
import type { BlockingReader } from './redis-transport.js';
import { socketOf } from './ioredis-internals.js';

/** How long a cut waits for ioredis' 'end' before it forgets the connection anyway. */
const END_WAIT_MS = 1_000;

/**
 * A dedicated ioredis connection for BZPOPMIN. After a reconnect ioredis would re-send a pop in
 * flight with its old timeout, so the owner drops the connection on `onLost` instead (see
 * `MarkerWaiter`).
 */
export class IoredisBlockingReader implements BlockingReader {
  constructor(
    private readonly client: RedisClient,
    private readonly forget: (client: RedisClient) => Promise<void>,
  ) {}

  popMin(key: string, timeoutMs: number): Promise<boolean> {
    return this.client.bzpopmin(key, timeoutMs / 1000).then((reply) => Boolean(reply));
  }

  onLost(listener: () => void): () => void {
    this.client.once('close', listener);
    return () => this.client.off('close', listener);
  }

  /**
   * QUIT would queue behind the blocked BZPOPMIN, so the socket is cut instead; the transport then
   * only forgets the connection (it is already ended). Cut, not ended: a FIN alone closes the
   * socket only once the server closes its side, which a paused or unreachable server never does.
   * Nothing is left unwritten on a blocking reader.
   */
  async close(): Promise<void> {
    const client = this.client;
    if (client.status !== 'end') {
      const ended = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, END_WAIT_MS);
        timer.unref();
        client.once('end', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      client.disconnect();
      if (!isIoredisCluster(client)) socketOf(client)?.destroy();
      await ended;
    }
    await this.forget(client);
  }
}
