import { Injectable } from '@nestjs/common';
import { RedisConnection } from '../../core/connection/redis-connection.js';
import type { SubscriberConnection } from '../../core/redis/redis-transport.js';

/** What the consumer of one topic shard does with the notices of its cancel channel. */
export interface CancelNoticeHandler {
  /** The job `id`, claimed under `token`, was cancelled while it ran. */
  cancelled(token: string, id: string): void;
  /** Notices may have been missed (the subscriber was disconnected): check the jobs held now. */
  missed(): void;
}

/**
 * Hears the cancel notices of running jobs (see scripts/cancel-job.lua.ts) for every consumer of
 * this application: one subscriber connection, opened when the first consumer starts, channels
 * reference-counted (one per topic shard consumed here), SSUBSCRIBE on a cluster so a notice stays
 * on its slot's shard. A notice is a fast path only: one published while the channel is not
 * subscribed (before its first SUBSCRIBE is confirmed, or while the connection is down) is lost, so
 * each confirmed SUBSCRIBE tells the channel's consumers to check the jobs they hold at once, and
 * the visibility extension finds every cancel anyway through its tombstone. Nothing here throws
 * into the void.
 */
@Injectable()
export class CancelListener {
  private subscriber?: SubscriberConnection;
  private connected?: Promise<void>;
  /** Handlers by channel; a channel is subscribed while it has one. */
  private readonly channels = new Map<string, Set<CancelNoticeHandler>>();
  /** Channels whose SUBSCRIBE Redis confirmed (ioredis subscribes them again after a reconnect). */
  private readonly confirmed = new Set<string>();
  private closed = false;

  constructor(private readonly connection: RedisConnection) {}

  /** Passes the notices of `channel` to `handler` until the returned function is called. */
  listen(channel: string, handler: CancelNoticeHandler): () => void {
    if (this.closed) return () => undefined;
    let handlers = this.channels.get(channel);
    if (!handlers) {
      this.channels.set(channel, (handlers = new Set()));
      void this.subscribe(channel);
    }
    handlers.add(handler);
    const own = handlers;
    return () => {
      own.delete(handler);
      if (own.size > 0 || this.channels.get(channel) !== own) return;
      this.channels.delete(channel);
      this.unsubscribe(channel);
    };
  }

  /** Stops listening (shutdown, after the consumers drained) and closes the subscriber connection. */
  close(): void {
    this.closed = true;
    this.channels.clear();
    this.confirmed.clear();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (subscriber) void subscriber.close().catch(() => undefined);
  }

  /**
   * Subscribes `channel` and, once Redis confirmed it, has its consumers check the jobs they hold:
   * a cancel published before that was not heard. A failure is left for the next reconnect (see
   * `ensureSubscriber`).
   */
  private async subscribe(channel: string): Promise<void> {
    const subscriber = this.ensureSubscriber();
    try {
      // Connect before the first SUBSCRIBE: a lazy client connecting because of it would run its
      // ready check (INFO) in subscriber mode, which Redis refuses.
      this.connected ??= subscriber.connect();
      await this.connected;
      await subscriber.subscribe(channel);
      const handlers = this.channels.get(channel);
      if (!handlers || this.closed) return;
      this.confirmed.add(channel);
      for (const handler of handlers) handler.missed();
    } catch {
      this.connected = undefined;
    }
  }

  private unsubscribe(channel: string): void {
    this.confirmed.delete(channel);
    const subscriber = this.subscriber;
    if (!subscriber?.ready) return;
    const done = subscriber.unsubscribe(channel);
    // Losing an UNSUBSCRIBE only leaves an idle channel.
    done.catch(() => undefined);
  }

  private ensureSubscriber(): SubscriberConnection {
    if (this.subscriber) return this.subscriber;
    const subscriber = this.connection.openSubscriber('cancel notices');
    const onMessage = (channel: string, message: string) => {
      const split = message.indexOf(':');
      if (split <= 0) return;
      const token = message.slice(0, split);
      const id = message.slice(split + 1);
      for (const handler of this.channels.get(channel) ?? []) handler.cancelled(token, id);
    };
    subscriber.onMessage(onMessage);
    let readyBefore = false;
    subscriber.onReady(() => {
      if (this.closed || this.subscriber !== subscriber) return;
      // After a reconnect every channel is subscribed again here (a repeated SUBSCRIBE is harmless
      // beside ioredis' own), so its consumers check once it is confirmed; on the first connect only
      // a channel whose SUBSCRIBE failed is tried again.
      for (const channel of this.channels.keys()) if (readyBefore || !this.confirmed.has(channel)) void this.subscribe(channel);
      readyBefore = true;
    });
    this.subscriber = subscriber;
    return subscriber;
  }
}
