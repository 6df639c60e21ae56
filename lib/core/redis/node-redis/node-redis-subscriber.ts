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

  async subscribe(channel: string): Promise<void> {
    if (this.target.kind === 'cluster') await this.target.cluster.sSubscribe(channel, this.dispatch);
    else await this.target.client.subscribe(channel, this.dispatch);
  }

  async unsubscribe(channel: string): Promise<void> {
    if (this.target.kind === 'cluster') await this.target.cluster.sUnsubscribe(channel, this.dispatch);
    else await this.target.client.unsubscribe(channel, this.dispatch);
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
