import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import type { RedisClient } from '../../core/options/redis-lock-config.js';
import type { WakeConnectionSource } from '../protocols/lock-protocol.interface.js';
import { collectReplies, successes } from './quorum-replies.js';
import type { RedlockMaster } from './redlock-master.js';

/** Release ids remembered to drop the other masters' copies of a release (far more than are ever in flight). */
const REMEMBERED_RELEASES = 4_096;

/**
 * The pub/sub connections of every Redlock master, presented as the one subscriber client that
 * `WakeSubscriber` drives. WakeSubscriber touches only `status`, `connect`, `subscribe`,
 * `unsubscribe` and the `message` / `ready` events, so reusing it keeps a single implementation of
 * the counted latch, local FIFO and lingering subscriptions for both modes.
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
class FanOutSubscriber extends EventEmitter {
  /** WakeSubscriber connects a client in 'wait' itself; the masters' connections are handled here. */
  readonly status = 'ready';
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
    connection.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    let readyBefore = false;
    connection.on('ready', () => {
      // Channels joined while this master was down were never subscribed on it.
      for (const channel of this.channels) connection.subscribe(channel).catch(() => undefined);
      if (readyBefore) this.emit('ready');
      readyBefore = true;
    });
    return connection;
  }

  private onMessage(channel: string, message: string): void {
    const id = `${channel}\n${message}`;
    if (this.seen.has(id)) return;
    this.seen.add(id);
    if (this.seen.size > REMEMBERED_RELEASES) this.seen.delete(this.seen.values().next().value as string);
    this.emit('message', channel, message);
  }
}

/**
 * The `WakeSubscriber`'s connection source in Redlock mode, backed by the masters' pub/sub
 * connections. The subscriber is cast: it provides the slice of a client that WakeSubscriber uses
 * (connect, subscribe, unsubscribe, message events), not a whole ioredis client.
 */
export function fanOutWakeConnection(masters: readonly RedlockMaster[], quorum: number, timeoutMs: number): WakeConnectionSource {
  let subscriber: FanOutSubscriber | undefined;
  return {
    isCluster: false,
    duplicate: () => (subscriber ??= new FanOutSubscriber(masters, quorum, timeoutMs)) as unknown as RedisClient,
  };
}
