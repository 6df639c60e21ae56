import type { GlideClusterClient } from '@valkey/valkey-glide';
import type { SubscriberConnection } from '../redis-transport.js';
import { toRedisLockError } from '../redis-errors.js';
import { toReplyError } from './glide-errors.js';
import type { GlidePush } from './glide-internals.js';
import { cutClient } from './glide-internals.js';
import type { GlideCommandClient } from './glide-package.js';

/** How long a SUBSCRIBE waits for the server's confirmation (GLIDE's own wait, per call). */
const CONFIRM_TIMEOUT_MS = 5_000;

/** What the transport gives a subscriber: a way to build its client, whose pushes come to `onPush`. */
export type SubscriberClientFactory = (onPush: (push: GlidePush) => void) => Promise<GlideCommandClient>;

/**
 * A dedicated GLIDE pub/sub client, created on `connect()`: SSUBSCRIBE on a cluster (GLIDE 2.5
 * subscribes to sharded channels dynamically and sends each to its slot's master), SUBSCRIBE
 * elsewhere. GLIDE subscribes every channel again by itself after a reconnect; the confirmation of
 * a channel already confirmed is that sign, and is reported as the connection being ready again.
 * GLIDE says nothing when the connection drops, so `ready` stays true between a loss and that
 * confirmation.
 */
export class GlideSubscriber implements SubscriberConnection {
  private client: GlideCommandClient | undefined;
  private connecting: Promise<GlideCommandClient> | undefined;
  private closed = false;
  private readonly confirmed = new Set<string>();
  private readonly messageListeners: Array<(channel: string, message: string) => void> = [];
  private readonly readyListeners: Array<() => void> = [];
  private readyPending = false;

  constructor(
    private readonly create: SubscriberClientFactory,
    private readonly sharded: boolean,
    private readonly forget: (subscriber: GlideSubscriber) => void,
  ) {}

  get ready(): boolean {
    return this.client !== undefined && !this.closed;
  }

  async connect(): Promise<void> {
    await this.connected();
  }

  async subscribe(channel: string): Promise<void> {
    const client = await this.connected();
    try {
      if (this.sharded) await (client as GlideClusterClient).ssubscribe([channel], CONFIRM_TIMEOUT_MS);
      else await client.subscribe([channel], CONFIRM_TIMEOUT_MS);
    } catch (error) {
      throw toRedisLockError(toReplyError(error), `subscribe to ${channel}`);
    }
    this.confirmed.add(channel);
  }

  async unsubscribe(channel: string): Promise<void> {
    this.confirmed.delete(channel);
    const client = this.client;
    if (!client || this.closed) return;
    try {
      if (this.sharded) await (client as GlideClusterClient).sunsubscribe([channel], CONFIRM_TIMEOUT_MS);
      else await client.unsubscribe([channel], CONFIRM_TIMEOUT_MS);
    } catch (error) {
      throw toRedisLockError(toReplyError(error), `unsubscribe from ${channel}`);
    }
  }

  onMessage(listener: (channel: string, message: string) => void): void {
    this.messageListeners.push(listener);
  }

  onReady(listener: () => void): void {
    this.readyListeners.push(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.forget(this);
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    if (client) cutClient(client);
  }

  private connected(): Promise<GlideCommandClient> {
    if (this.closed) return Promise.reject(new Error('the subscriber connection is closed'));
    this.connecting ??= this.create((push) => this.onPush(push)).then(
      (client) => {
        if (this.closed) {
          cutClient(client);
          throw new Error('the subscriber connection is closed');
        }
        this.client = client;
        this.announceReady();
        return client;
      },
      (error: unknown) => {
        this.connecting = undefined; // the next call tries again
        throw error;
      },
    );
    return this.connecting;
  }

  private onPush(push: GlidePush): void {
    if (push.kind === 'Message' || push.kind === 'SMessage') {
      const [channel, message] = push.values.map(String);
      for (const listener of this.messageListeners) listener(channel, message);
    } else if ((push.kind === 'Subscribe' || push.kind === 'SSubscribe') && this.confirmed.has(String(push.values[0]))) {
      this.announceReady();
    }
  }

  /** Once per turn: a reconnect confirms every channel again, one push each. */
  private announceReady(): void {
    if (this.readyPending) return;
    this.readyPending = true;
    queueMicrotask(() => {
      this.readyPending = false;
      if (!this.closed) for (const listener of this.readyListeners) listener();
    });
  }
}
