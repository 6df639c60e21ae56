import calculateSlot from 'cluster-key-slot';
import type { SubscriberConnection } from '../redis-transport.js';
import type { NodeRedisClient, NodeRedisCluster } from './node-redis-types.js';

/** The dedicated pub/sub connection: a copy of the command client, or of the cluster client for SSUBSCRIBE. */
export type SubscriberTarget =
  { readonly kind: 'client'; readonly client: NodeRedisClient } | { readonly kind: 'cluster'; readonly cluster: NodeRedisCluster };

/**
 * A dedicated node-redis pub/sub connection: SSUBSCRIBE on a cluster (node-redis opens one
 * subscriber connection per shard and routes each channel to its slot's master), SUBSCRIBE
 * elsewhere. node-redis subscribes every channel again by itself after a reconnect. Its listeners
 * are per channel; one dispatcher here fans each message out to `onMessage`'s listeners.
 */
export class NodeRedisSubscriber implements SubscriberConnection {
  private readonly listeners: Array<(channel: string, message: string) => void> = [];
  private readonly dispatch = (message: string, channel: string): void => {
    for (const listener of this.listeners) listener(channel, message);
  };
  private connecting: Promise<unknown> | undefined;
  /** Channels subscribed here (or being subscribed). */
  private readonly channels = new Set<string>();
  private barriers = 0;

  constructor(
    private readonly target: SubscriberTarget,
    /** Rejects a wait for the connection after the transport's bound (none: wait as long as it takes). */
    private readonly bounded: <T>(wait: Promise<T>, action: string) => Promise<T>,
    private readonly closeTarget: () => Promise<void>,
  ) {}

  private get connection(): NodeRedisClient | NodeRedisCluster {
    return this.target.kind === 'client' ? this.target.client : this.target.cluster;
  }

  get ready(): boolean {
    return this.connection.isReady;
  }

  /**
   * node-redis' `connect()` settles only once connected, retrying meanwhile: the wait is bounded, and
   * a later call waits for the same attempt.
   */
  async connect(): Promise<void> {
    if (this.connection.isReady) return;
    if (!this.connecting) {
      this.connecting = this.connection.connect();
      this.connecting.catch(() => (this.connecting = undefined));
    }
    await this.bounded(this.connecting, 'connect the subscriber');
  }

  /**
   * Resolves once Redis confirmed a subscription to `channel` on this connection, after the messages
   * it had queued for it: callers use a repeated subscribe as that barrier (see
   * `JobWaiters.hearPublished`). node-redis answers a subscribe of a channel it already has at once,
   * without a round trip, so a repeated one subscribes (and then drops) a channel of its own on the
   * same connection: the channel's shard on a cluster, by the same hash slot.
   */
  async subscribe(channel: string): Promise<void> {
    if (!this.channels.has(channel)) {
      this.channels.add(channel);
      try {
        await this.send('subscribe', channel, this.dispatch);
      } catch (error) {
        this.channels.delete(channel);
        throw error;
      }
      return;
    }
    const barrier = this.barrierFor(channel);
    if (barrier === undefined) return;
    const none = (): void => undefined;
    await this.send('subscribe', barrier, none);
    await this.send('unsubscribe', barrier, none);
  }

  async unsubscribe(channel: string): Promise<void> {
    this.channels.delete(channel);
    await this.send('unsubscribe', channel, this.dispatch);
  }

  private send(action: 'subscribe' | 'unsubscribe', channel: string, listener: (message: string, channel: string) => void): Promise<void> {
    if (this.target.kind === 'cluster') {
      const cluster = this.target.cluster;
      return action === 'subscribe' ? cluster.sSubscribe(channel, listener) : cluster.sUnsubscribe(channel, listener);
    }
    const client = this.target.client;
    return action === 'subscribe' ? client.subscribe(channel, listener) : client.unsubscribe(channel, listener);
  }

  /** A channel nobody else uses, on `channel`'s connection (its hash slot, on a cluster); undefined if none can be named. */
  private barrierFor(channel: string): string | undefined {
    const n = ++this.barriers;
    if (this.target.kind === 'client') return `${channel}:subscribed:${n}`;
    const slot = calculateSlot(channel);
    return [`${channel}:subscribed:${n}`, `{${channel}}:subscribed:${n}`].find((name) => calculateSlot(name) === slot);
  }

  onMessage(listener: (channel: string, message: string) => void): void {
    this.listeners.push(listener);
  }

  /** A cluster copy reports each of its connections becoming ready ('node-ready'), the shard subscribers included. */
  onReady(listener: () => void): void {
    if (this.target.kind === 'cluster') this.target.cluster.on('node-ready', listener);
    else this.target.client.on('ready', listener);
  }

  close(): Promise<void> {
    return this.closeTarget();
  }
}
