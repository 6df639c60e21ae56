import type { RedisClient } from '../options/redis-lock-config.js';
import type { SubscriberConnection } from './redis-transport.js';

type ShardedClient = RedisClient & {
  ssubscribe(channel: string): Promise<unknown>;
  sunsubscribe(channel: string): Promise<unknown>;
};

/**
 * A dedicated ioredis pub/sub connection: SSUBSCRIBE on a cluster (the copy routes each channel to
 * its slot's master), SUBSCRIBE elsewhere. ioredis subscribes every channel again by itself after
 * a reconnect (`autoResubscribe`).
 */
export class IoredisSubscriber implements SubscriberConnection {
  constructor(
    private readonly client: RedisClient,
    private readonly sharded: boolean,
    private readonly closeClient: (client: RedisClient) => Promise<void>,
  ) {}

  get ready(): boolean {
    return this.client.status === 'ready';
  }

  connect(): Promise<void> {
    return this.client.status === 'wait' ? this.client.connect() : Promise.resolve();
  }

  async subscribe(channel: string): Promise<void> {
    if (this.sharded) await (this.client as ShardedClient).ssubscribe(channel);
    else await this.client.subscribe(channel);
  }

  async unsubscribe(channel: string): Promise<void> {
    if (this.sharded) await (this.client as ShardedClient).sunsubscribe(channel);
    else await this.client.unsubscribe(channel);
  }

  onMessage(listener: (channel: string, message: string) => void): void {
    this.client.on('message', listener);
    this.client.on('smessage', listener);
  }

  onReady(listener: () => void): void {
    this.client.on('ready', listener);
  }

  close(): Promise<void> {
    return this.closeClient(this.client);
  }
}
