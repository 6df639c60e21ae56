import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import type { SubscriberConnection } from '../../core/redis/redis-transport.js';
import type { WakeConnectionSource } from '../protocols/lock-protocol.interface.js';
import { collectReplies, successes } from './quorum-replies.js';
import type { RedlockMaster } from './redlock-master.js';

/** Release ids remembered to drop the other masters' copies of a release (far more than are ever in flight). */
const REMEMBERED_RELEASES = 4_096;

/**
 * The pub/sub connections of every Redlock master, presented as the one `SubscriberConnection` that
 * `WakeSubscriber` drives, so that a single implementation of the counted latch, local FIFO and
 * lingering subscriptions serves both modes.
 *
 * - A release is announced on every master with the same id ('1:<id>'): the first copy is passed
 *   on, the others are dropped, so one release wakes as many waiters as on one Redis.
 * - `subscribe` resolves once a majority of masters confirmed: a holder's release is published on
 *   the majority it holds, which shares a master with ours. It never rejects: with fewer masters a
 *   waiter still wakes when the holder's lease ends (the bound WakeSubscriber always keeps).
 * - A master's pub/sub connection that comes back re-subscribes every channel in use, including
 *   those it missed while down; a reconnect is passed on as `ready`, which makes WakeSubscriber let
 *   every waiter try again (releases may have been missed).
 */
class FanOutSubscriber extends EventEmitter implements SubscriberConnection {
  /** The masters' connections are connected here, each when first used. */
  readonly ready = true;
  private readonly channels = new Set<string>();
  private readonly seen = new Set<string>();
  private readonly connections: Array<Redis | undefined>;

  constructor(
    private readonly masters: readonly RedlockMaster[],
    private readonly quorum: number,
    private readonly timeoutMs: number,
  ) {
    super();
    this.connections = masters.map(() => undefined);
    // WakeSubscriber takes its first 'ready' for the initial connect and later ones for reconnects.
    process.nextTick(() => this.emit('ready'));
  }

  connect(): Promise<void> {
    return Promise.resolve();
  }

  onMessage(listener: (channel: string, message: string) => void): void {
    this.on('message', listener);
  }

  onReady(listener: () => void): void {
    this.on('ready', listener);
  }

  /** Nothing of its own to close: the masters' pub/sub connections close with the masters. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  async subscribe(channel: string): Promise<void> {
    this.channels.add(channel);
    const confirmations = this.masters.map((_, i) => this.subscribeOn(i, channel));
    await collectReplies(confirmations, this.timeoutMs, (replies) => successes(replies).length >= this.quorum);
  }

  async unsubscribe(channel: string): Promise<void> {
    this.channels.delete(channel);
    await Promise.all(
      this.connections.map((connection) =>
        connection?.status === 'ready' ? connection.unsubscribe(channel).catch(() => undefined) : undefined,
      ),
    );
  }

  private async subscribeOn(index: number, channel: string): Promise<void> {
    const connection = this.connectionTo(index);
    if (connection.status === 'wait') await connection.connect();
    await connection.subscribe(channel);
  }

  private connectionTo(index: number): Redis {
    const existing = this.connections[index];
    if (existing) return existing;
    const connection = this.masters[index].subscriber();
    this.connections[index] = connection;
    connection.on('message', (channel: string, message: string) => this.passOn(channel, message));
    let readyBefore = false;
    connection.on('ready', () => {
      // Channels joined while this master was down were never subscribed on it.
      for (const channel of this.channels) connection.subscribe(channel).catch(() => undefined);
      if (readyBefore) this.emit('ready');
      readyBefore = true;
    });
    return connection;
  }

  private passOn(channel: string, message: string): void {
    const id = `${channel}\n${message}`;
    if (this.seen.has(id)) return;
    this.seen.add(id);
    if (this.seen.size > REMEMBERED_RELEASES) this.seen.delete(this.seen.values().next().value as string);
    this.emit('message', channel, message);
  }
}

/** The `WakeSubscriber`'s connection source in Redlock mode, backed by the masters' pub/sub connections. */
export function fanOutWakeConnection(masters: readonly RedlockMaster[], quorum: number, timeoutMs: number): WakeConnectionSource {
  let subscriber: FanOutSubscriber | undefined;
  return { openSubscriber: () => (subscriber ??= new FanOutSubscriber(masters, quorum, timeoutMs)) };
}
