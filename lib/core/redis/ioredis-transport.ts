import calculateSlot from 'cluster-key-slot';
import { ioredisFlavour, isIoredisCluster, type IoredisFlavour } from './ioredis-flavour.js';
import type { Cluster, Redis } from 'ioredis';
import { RedisConnectionError } from '../errors/redis-connection.error.js';
import { errorMessage } from '../errors/error-message.js';
import type { RedisClient } from '../options/redis-lock-config.js';
import type { RedisConnectionOptions } from '../options/redis-lock-module-options.interface.js';
import { assertSupportedClientOptions, redisOptionOrigin } from './client-options-check.js';
import { closeConnection } from './close-quietly.js';
import { coalesceWritesPerTick, writeCorkedNow } from './coalesce-writes.js';
import { createRedisClient, describeEndpoint, silenceTimeout } from './create-redis-client.js';
import { IoredisBlockingReader } from './ioredis-blocking-reader.js';
import { socketOf, startupNodesOf } from './ioredis-internals.js';
import { runScriptOn } from './ioredis-script-runner.js';
import { IoredisSubscriber } from './ioredis-subscriber.js';
import { observeAutomaticResends } from './observe-automatic-resends.js';
import { preloadScripts } from './preload-scripts.js';
import { RedisReachability } from './reachability.js';
import { lockReconnectStrategy } from './lock-reconnect-strategy.js';
import { reconnectOverrideFor } from './reconnect-strategy.js';
import { connectionAdvice, describeConnectionCause } from './redis-errors.js';
import type { RedisScript } from './redis-script.js';
import type {
  BlockingReader,
  ModuleTransport,
  ScannedKeys,
  ScratchConnection,
  ServerReply,
  SubscriberConnection,
  TransportPolicy,
} from './redis-transport.js';
import { scanKeys } from './scan-keys.js';
import { commandOnEveryMaster, openIoredisScratch } from './ioredis-maintenance.js';
import { SelectedDatabaseCheck } from './selected-database-check.js';

/**
 * The ioredis transport: the one owner of the module's ioredis connections and of everything that
 * wraps their commands, installed here and nowhere else, on one hook chain per connection
 * (ioredis-command-hooks.ts):
 * - the command connection the module built: its writes coalesced per turn (coalesce-writes.ts),
 *   its reachability watched and bounded (reachability.ts), the commands ioredis re-sends by itself
 *   observed (observe-automatic-resends.ts); a cluster's node connections: coalesced writes;
 * - a client the user passed in: watched, never wrapped, never closed;
 * - the dedicated connections (subscribers, blocking readers): copies with the client's settings,
 *   closed with the transport.
 * ioredis' private fields are read in ioredis-internals.ts only.
 */
export class IoredisTransport implements ModuleTransport {
  readonly resendsUnanswered = true;
  readonly client: RedisClient;
  readonly owned: boolean;
  readonly isCluster: boolean;
  /** Pub/sub on a cluster is sharded (SSUBSCRIBE per master); classic where the flavour cannot (see `IoredisFlavour`). */
  private readonly sharded: boolean;
  readonly publishCommand: 'publish' | 'spublish';
  readonly endpoint: string;
  /** None on a cluster. */
  readonly reachability: RedisReachability | undefined;
  /** Whether the command connection is on the configured database (none on a cluster: no SELECT there). */
  private readonly selectedDatabase: SelectedDatabaseCheck | undefined;
  private readonly dedicated = new Set<RedisClient>();

  constructor(
    options: RedisConnectionOptions,
    private readonly policy: TransportPolicy,
    private readonly flavour: IoredisFlavour = ioredisFlavour('ioredis'),
  ) {
    const { client, owned } = createRedisClient(options, { unreachableTimeout: policy.unreachableTimeout }, flavour);
    // Before anything uses it (a created client connects lazily, so there is nothing to close).
    assertSupportedClientOptions(client, redisOptionOrigin(options));
    this.client = client;
    this.owned = owned;
    this.isCluster = isIoredisCluster(client);
    this.sharded = this.isCluster && flavour.shardedPubSub;
    this.publishCommand = this.sharded ? 'spublish' : 'publish';
    this.endpoint = describeEndpoint(client);
    if (isIoredisCluster(client)) {
      this.reachability = undefined;
      this.selectedDatabase = undefined;
    } else {
      this.selectedDatabase = new SelectedDatabaseCheck(client);
      this.reachability = RedisReachability.watch(client, this.endpoint, this.boundOf(client, options));
    }
    // A client the application passed in: its errors begin and end outages, its hiccups are its own to log.
    client.on('error', (error: Error) => policy.onConnectionError('commands', error, owned));
    if (!owned) return;
    if (isIoredisCluster(client)) {
      // Each node's command connection, including those the cluster opens later.
      client.on('+node', (node: Redis) => coalesceWritesPerTick(node));
      for (const node of client.nodes()) coalesceWritesPerTick(node);
    } else {
      observeAutomaticResends(client);
      coalesceWritesPerTick(client);
    }
  }

  /**
   * The bound only where the user left ioredis' queueing and timeouts alone: their own choice wins.
   * Not behind Sentinel: a failover (down-after-milliseconds plus the election, seconds) is ridden
   * out there, which is what Sentinel is deployed for.
   */
  private boundOf(client: Redis, options: RedisConnectionOptions): { bound: number; silence: number } | undefined {
    const timeout = this.policy.unreachableTimeout;
    const given = typeof options === 'object' && !('client' in options) ? (options as Record<string, unknown>) : {};
    const bounded =
      this.owned &&
      timeout !== false &&
      !client.options.sentinels?.length &&
      given.maxRetriesPerRequest === undefined &&
      given.enableOfflineQueue === undefined &&
      given.socketTimeout === undefined;
    return bounded ? { bound: timeout, silence: silenceTimeout(timeout, this.policy.longestBlockingCommand) } : undefined;
  }

  /** Connected and ready for commands. */
  get ready(): boolean {
    return this.client.status === 'ready';
  }

  get ended(): boolean {
    return this.client.status === 'end';
  }

  /** Calls `listener` each time the command connection is ready (connected, or back after a loss). */
  onReady(listener: () => void): void {
    this.client.on('ready', listener);
  }

  runScript<T = unknown>(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    return runScriptOn<T>(this.client, script, keys, args);
  }

  loadScripts(scripts: readonly RedisScript[]): Promise<void> {
    return preloadScripts(this.client, scripts);
  }

  scanKeys(pattern: string, maxKeys: number, maxCalls?: number): Promise<ScannedKeys> {
    return scanKeys(this.client, pattern, maxKeys, maxCalls);
  }

  command<T = unknown>(name: string, ...args: Array<string | number>): Promise<T> {
    return this.client.call(name, ...args) as Promise<T>;
  }

  writeNow(): void {
    writeCorkedNow(this.client);
  }

  /**
   * WAIT counts the writes of the connection it runs on: the client itself on a single Redis or
   * Sentinel, the slot's master connection on a cluster. Called in the same tick as the write's
   * reply, so the socket noted here is the one that carried it.
   */
  async waitForReplicas(slotKey: string, replicas: number, timeoutMs: number): Promise<number> {
    const connection = connectionOf(this.client, slotKey);
    const socket = socketOf(connection);
    const replied = Number(await connection.call('WAIT', replicas, timeoutMs));
    // A WAIT cut off by a lost connection is sent again after the reconnect (ioredis re-sends
    // unanswered commands), possibly to a newly promoted primary, where it counts the writes of a
    // fresh connection, i.e. none, and succeeds at once. Such an answer says nothing about the write.
    if (socketOf(connection) !== socket) throw new Error('the connection was re-established while waiting for replicas');
    return replied;
  }

  commandOnEveryMaster<T = unknown>(timeoutMs: number, name: string, ...args: Array<string | number>): Promise<Array<ServerReply<T>>> {
    return commandOnEveryMaster<T>(this.client, timeoutMs, name, ...args);
  }

  openScratch(): ScratchConnection {
    return openIoredisScratch(this.client);
  }

  openSubscriber(purpose: string): SubscriberConnection {
    const copy = this.duplicate(purpose, { shardedPubSub: this.sharded, classicPubSub: this.isCluster && !this.sharded });
    return new IoredisSubscriber(copy, this.sharded, (closed) => this.release(closed));
  }

  openBlockingReader(purpose: string): BlockingReader {
    return new IoredisBlockingReader(this.duplicate(purpose), (copy) => this.release(copy));
  }

  /**
   * A new connection with the same settings, closed with the transport even when the command client
   * belongs to the user.
   *
   * `shardedPubSub`: on a cluster, the copy keeps one subscriber connection per master and routes
   * each SSUBSCRIBE to the master of the channel's slot (ioredis' `shardedSubscribers`). Without it
   * ioredis sends SSUBSCRIBE to one arbitrary node, which answers MOVED for most channels, and
   * the subscription never completes.
   *
   * The copy has the client's settings (protocol and reply mapping included), except that a copy of
   * a client running ioredis' default `retryStrategy` reconnects with `lockReconnectStrategy`: a
   * subscriber or blocking reader that is slow to come back delays wake-ups and job pick-up.
   */
  private duplicate(purpose: string, options: { shardedPubSub?: boolean; classicPubSub?: boolean } = {}): RedisClient {
    let copy: RedisClient;
    if (isIoredisCluster(this.client) && options.classicPubSub) {
      copy = this.classicSubscriberOf(this.client);
    } else if (isIoredisCluster(this.client)) {
      copy = options.shardedPubSub ? this.client.duplicate([], { shardedSubscribers: true }) : this.client.duplicate();
    } else {
      copy = this.client.duplicate(reconnectOverrideFor(this.client));
      observeAutomaticResends(copy);
    }
    this.dedicated.add(copy);
    copy.on('error', (error: Error) => this.policy.onConnectionError(purpose, error, true));
    return copy;
  }

  /**
   * Classic pub/sub on a cluster whose flavour has no sharded subscribers (iovalkey): one plain
   * connection to one master, with the cluster's node settings. Redis Cluster carries every PUBLISH
   * to every node, so one node hears every channel; it reconnects and subscribes again like any
   * plain connection (iovalkey's own cluster subscriber was seen to lose its subscriptions when it
   * moved between nodes).
   */
  private classicSubscriberOf(cluster: Cluster): Redis {
    const [node] = cluster.nodes('master');
    const where = node ? { host: node.options.host, port: node.options.port } : seedAddress(startupNodesOf(cluster)[0]);
    return new this.flavour.Redis({ ...cluster.options.redisOptions, ...where, lazyConnect: true, retryStrategy: lockReconnectStrategy });
  }

  /** Closes one dedicated connection early (for example a blocking client found hung). */
  private async release(copy: RedisClient): Promise<void> {
    this.dedicated.delete(copy);
    await closeConnection(copy, { quit: false });
  }

  /**
   * Connects (a client built here connects lazily) and checks that Redis answers and that the
   * connection is on the configured database, within `timeoutMs`. A connection the transport built
   * is disconnected when a check fails.
   */
  async verify(timeoutMs: number): Promise<void> {
    await this.verifyReachable(timeoutMs);
    try {
      await this.selectedDatabase?.verify(timeoutMs);
    } catch (error) {
      this.abandon();
      throw error;
    }
  }

  /** Disconnects the command connection when the transport built it (a failed bootstrap check). */
  abandon(): void {
    if (this.owned && this.client.status !== 'end') this.client.disconnect();
  }

  /**
   * Closes every connection this transport created, all at once: the dedicated ones carry no writes
   * and are cut at once; the command client gets a QUIT by `deadline`, so that replies to commands
   * already sent are read, unless none are awaited or Redis is known not to answer (see
   * `closeConnection`). A reply not read in time is lost, not the command: what was written is
   * still sent before the socket closes.
   */
  async close(deadline: number): Promise<void> {
    const closing = [...this.dedicated].map((c) => closeConnection(c, { quit: false }));
    this.dedicated.clear();
    if (this.owned) closing.push(closeConnection(this.client, { deadline }));
    this.reachability?.stop();
    await Promise.all(closing);
  }

  private async verifyReachable(timeoutMs: number): Promise<void> {
    const client = this.client;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      if (client.status === 'wait') await Promise.race([client.connect(), timeout]);
      await Promise.race([client.ping(), timeout]);
    } catch (error) {
      // ioredis rejects a failed connect with "Connection is closed."; the error it reported just
      // before (refused, unknown host, WRONGPASS / NOAUTH, no answer) is the cause worth naming.
      const cause = this.reachability?.lastConnectionError ?? (error instanceof Error ? error : undefined);
      this.abandon();
      const reason = cause ? describeConnectionCause(cause) : errorMessage(error);
      const advice = connectionAdvice(cause ?? error);
      throw new RedisConnectionError(`Cannot reach Redis at ${describeEndpoint(client)}: ${reason}. ${advice}`, cause ?? error);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * The connection that runs commands on `key`: a plain client is one connection; on a cluster it is
 * the master of the key's slot per ioredis's slot map (`cluster.slots[slot][0]` is its `host:port`).
 */
function connectionOf(client: RedisClient, key: string): Redis {
  if (!isIoredisCluster(client)) return client;
  const nodeKey = client.slots[calculateSlot(key)]?.[0];
  const node = nodeKey === undefined ? undefined : client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === nodeKey);
  if (!node) throw new Error(`no known master for the slot of ${JSON.stringify(key)} (cluster slot map not loaded or changing)`);
  return node;
}

/** Where a cluster seed node given as a port, a URL or `{ host, port }` is. */
function seedAddress(seed: string | number | { host?: string; port?: number } | undefined): { host?: string; port?: number } {
  if (seed === undefined || typeof seed === 'object') return seed ?? {};
  if (typeof seed === 'number') return { port: seed };
  const url = new URL(seed.includes('://') ? seed : `redis://${seed}`);
  return { host: url.hostname, port: Number(url.port || 6379) };
}
