import type { BlockingReader } from '../redis-transport.js';
import { toRedisLockError } from '../redis-errors.js';
import { isConnectionFailure, toReplyError } from './glide-errors.js';
import { cutClient } from './glide-internals.js';
import type { GlideCommandClient } from './glide-package.js';
import { glidePackage } from './glide-package.js';

/**
 * A dedicated GLIDE client for BZPOPMIN, created on the first pop. GLIDE's request timeout never
 * cuts it: GLIDE's core gives a blocking command (BZPOPMIN, WAIT, …) its own timeout, the
 * command's plus a margin, whatever `requestTimeout` says. A pop cut off by a dropped connection
 * rejects (GLIDE never sends it again); the reader then reports itself lost, before the rejection,
 * and is not used again (see `MarkerWaiter`).
 */
export class GlideBlockingReader implements BlockingReader {
  private connecting: Promise<GlideCommandClient> | undefined;
  private readonly lostListeners = new Set<() => void>();
  private lost = false;
  private closed = false;

  constructor(
    private readonly create: () => Promise<GlideCommandClient>,
    private readonly forget: (reader: GlideBlockingReader) => void,
  ) {}

  async popMin(key: string, timeoutMs: number): Promise<boolean> {
    try {
      const client = await this.connected();
      const reply = await client.customCommand(['BZPOPMIN', key, String(timeoutMs / 1000)], { decoder: glidePackage().Decoder.String });
      return reply !== null;
    } catch (error) {
      if (isConnectionFailure(error)) this.reportLost();
      throw toRedisLockError(toReplyError(error), `wait on ${key}`);
    }
  }

  onLost(listener: () => void): () => void {
    this.lostListeners.add(listener);
    return () => this.lostListeners.delete(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.forget(this);
    const client = await this.connecting?.catch(() => undefined);
    if (client) cutClient(client);
    this.reportLost();
  }

  private connected(): Promise<GlideCommandClient> {
    if (this.closed) return Promise.reject(new Error('the blocking connection is closed'));
    this.connecting ??= this.create().then((client) => {
      if (this.closed) cutClient(client);
      return client;
    });
    return this.connecting;
  }

  private reportLost(): void {
    if (this.lost) return;
    this.lost = true;
    for (const listener of [...this.lostListeners]) listener();
  }
}
