import calculateSlot from 'cluster-key-slot';
import { RedisConnectionError } from '../../errors/redis-connection.error.js';
import { errorMessage } from '../../errors/error-message.js';
import { packageRequire } from '../../runtime/build-format.js';
import { lockReconnectStrategy } from '../lock-reconnect-strategy.js';
import { connectionAdvice, describeConnectionCause, toRedisLockError } from '../redis-errors.js';
import type { RedisScript } from '../redis-script.js';
import type {
  BlockingReader,
  ModuleTransport,
  ScannedKeys,
  ScratchConnection,
  ServerReply,
  SubscriberConnection,
  TransportPolicy,
} from '../redis-transport.js';
import { NodeRedisBlockingReader } from './node-redis-blocking-reader.js';
import { describeNodeRedisEndpoint } from './node-redis-endpoint.js';
import { assertSupportedNodeRedisOptions } from './node-redis-options-check.js';
import { isAbortedCommand, NodeRedisOutageBound } from './node-redis-outage.js';
import { destroyNodeRedis } from './destroy-node-redis.js';
import { asReplyError, isNoScript, resp2Shape, RESP2_COMMAND_OPTIONS } from './node-redis-replies.js';
import { firstKeyOf } from './node-redis-routing.js';
import { scanServers } from '../scan-keys.js';
import { NodeRedisScratch } from './node-redis-scratch.js';
import { NodeRedisSubscriber } from './node-redis-subscriber.js';
import type {
  NodeRedisClient,
  NodeRedisClientOptions,
  NodeRedisCluster,
  NodeRedisClusterOptions,
  NodeRedisCommandOptions,
  NodeRedisPackage,
  NodeRedisSocketOptions,
} from './node-redis-types.js';

/**
 * Where the transport's command connection comes from: a node-redis client or cluster the
 * application owns (used as it is, never closed), or the options of one the transport builds
 * (`createClient` / `createCluster`), connects in `verify` and closes in `close`.
 */
export type NodeRedisSource =
  | { readonly client: NodeRedisClient | NodeRedisCluster }
  | { readonly options: NodeRedisClientOptions | NodeRedisClusterOptions; readonly cluster: boolean };

/** The command connection: one client, or a cluster client that routes each command by its first key. */
type Target =
  { readonly kind: 'client'; readonly client: NodeRedisClient } | { readonly kind: 'cluster'; readonly cluster: NodeRedisCluster };

/**
 * The node-redis (`redis` 6) transport. Its differences from ioredis, kept here:
 * - replies come in RESP2 shapes whatever protocol the client speaks (node-redis 6 speaks RESP3
 *   by default): see node-redis-replies.ts;
 * - a command whose socket drops before its reply is rejected, never re-sent (`resendsUnanswered`
 *   false); commands sent while the connection is down wait in node-redis' offline queue, bounded
 *   by `unreachableTimeout` on a connection built here (node-redis-outage.ts);
 * - a server's error reply is an Error named 'ReplyError', as the shared error mapping expects;
 * - the dedicated connections (subscriber, blocking readers, scratch) are `duplicate()`s of the
 *   command client, the blocking and scratch ones built not to reconnect.
 */
export class NodeRedisTransport implements ModuleTransport {
  readonly resendsUnanswered = false;
  readonly isCluster: boolean;
  readonly publishCommand: 'publish' | 'spublish';
  readonly endpoint: string;
  /** node-redis reports no silence of a connection: lib/ skips the checks it would need it for. */
  readonly reachability = undefined;
  /** Whether the transport built the command connection (and so closes it). */
  readonly owned: boolean;
  private readonly target: Target;
  /** ms a command waits for a connection that is down; undefined: node-redis' own settings decide. */
  private readonly bound: number | undefined;
  /** The command client's outage (single Redis); a cluster's per node client, made when first seen. */
  private readonly outage: NodeRedisOutageBound | undefined;
  private readonly nodeOutages = new Map<NodeRedisClient, NodeRedisOutageBound>();
  /** A cluster's, for a command whose slot has no known master yet (topology not loaded). */
  private readonly clusterOutage: NodeRedisOutageBound | undefined;
  private readonly dedicated = new Set<NodeRedisClient | NodeRedisCluster>();
  private readonly detach: Array<() => void> = [];
  private closed = false;
  private targetEnded = false;

  constructor(
    source: NodeRedisSource,
    private readonly policy: TransportPolicy,
  ) {
    // Before anything is built (nothing to close when it throws).
    assertSupportedNodeRedisOptions(source);
    this.owned = !('client' in source);
    const connection = 'client' in source ? source.client : buildTarget(source, policy.unreachableTimeout);
    this.target = isCluster(connection)
      ? { kind: 'cluster', cluster: connection }
      : { kind: 'client', client: connection as NodeRedisClient };
    this.isCluster = this.target.kind === 'cluster';
    this.publishCommand = this.isCluster ? 'spublish' : 'publish';
    this.endpoint = describeNodeRedisEndpoint(source);
    const timeout = policy.unreachableTimeout;
    const queueLeftAlone = !('client' in source) && (source.options as NodeRedisClientOptions).disableOfflineQueue === undefined;
    this.bound = this.owned && timeout !== false && queueLeftAlone ? timeout : undefined;
    this.outage = this.target.kind === 'client' ? new NodeRedisOutageBound(this.target.client, this.endpoint, this.bound) : undefined;
    this.clusterOutage =
      this.target.kind === 'cluster' && this.bound !== undefined
        ? new NodeRedisOutageBound(this.target.cluster, this.endpoint, this.bound, { error: 'node-error', ready: 'connect' })
        : undefined;
    // node-redis throws an 'error' nobody listens to; a client the application passed in: its hiccups are its own to log.
    const onError = (error: Error): void => {
      const normalised = asReplyError(error) as Error;
      this.lastConnectionError = normalised;
      policy.onConnectionError('commands', normalised, this.owned);
    };
    const emitter = this.connection;
    emitter.on('error', onError);
    const onEnd = (): void => void (this.targetEnded = true);
    emitter.on(this.target.kind === 'cluster' ? 'disconnect' : 'end', onEnd);
    this.detach.push(() => {
      emitter.off('error', onError);
      emitter.off(this.target.kind === 'cluster' ? 'disconnect' : 'end', onEnd);
    });
  }

  /** Why the command connection failed last (refused, reset, WRONGPASS), named in a failed call's error; cleared once ready. */
  private lastConnectionError: Error | undefined;

  /** The cause a call's connection error names: the connection's last failure while it is not ready. */
  private get cause(): string | undefined {
    return this.ready ? undefined : this.lastConnectionError?.message.replace(/\.+$/, '');
  }

  private get connection(): NodeRedisClient | NodeRedisCluster {
    return this.target.kind === 'cluster' ? this.target.cluster : this.target.client;
  }

  get ready(): boolean {
    return this.connection.isReady;
  }

  get ended(): boolean {
    return this.closed || this.targetEnded;
  }

  /** A cluster reports each of its node connections becoming ready ('node-ready'). */
  onReady(listener: () => void): void {
    this.connection.on(this.target.kind === 'cluster' ? 'node-ready' : 'ready', listener);
  }

  runScript<T = unknown>(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    const tail = [String(keys.length), ...keys, ...args.map(String)];
    const action = `run ${script.name}`;
    return this.send<T>(['EVALSHA', script.sha, ...tail], action, false).catch((error: unknown) => {
      if (!isNoScript(error)) throw toRedisLockError(error, action, this.cause);
      return this.send<T>(['EVAL', script.source, ...tail], action, false).catch((evalError: unknown) => {
        throw toRedisLockError(evalError, action, this.cause);
      });
    });
  }

  async loadScripts(scripts: readonly RedisScript[]): Promise<void> {
    const servers = await this.masterClients();
    const load = (client: NodeRedisClient, script: RedisScript) =>
      this.sendTo(client, ['SCRIPT', 'LOAD', script.source], `load ${script.name}`);
    await Promise.all(servers.flatMap(({ client }) => scripts.map((script) => load(client, script))));
  }

  async scanKeys(pattern: string, maxKeys: number, maxCalls?: number): Promise<ScannedKeys> {
    const servers = await this.masterClients();
    return scanServers(
      servers.map(
        ({ client }) =>
          (args: readonly string[]) =>
            this.sendTo(client, args, 'scan keys'),
      ),
      pattern,
      maxKeys,
      maxCalls,
    );
  }

  /** A server's refusal rejects with its 'ReplyError' (as ioredis' does); a connection failure with `RedisConnectionError`. */
  command<T = unknown>(name: string, ...args: Array<string | number>): Promise<T> {
    const action = `run ${name.toUpperCase()}`;
    return this.send<T>([name, ...args.map(String)], action, true).catch((error: unknown) => {
      if (error instanceof Error && error.name === 'ReplyError') throw error;
      throw toRedisLockError(error, action, this.cause);
    });
  }

  /** node-redis writes each command at once (no batching per turn here). */
  writeNow(): void {}

  /**
   * WAIT on the connection that carried `slotKey`'s writes: the client, or the slot's master node
   * client on a cluster, noted in the same tick as the write's reply. node-redis rejects a WAIT cut
   * off by a lost connection, but one queued while it reconnects would run on the new socket and
   * count none of the writes: the socket epoch tells them apart.
   */
  async waitForReplicas(slotKey: string, replicas: number, timeoutMs: number): Promise<number> {
    const connection = this.target.kind === 'client' ? this.target.client : await this.masterOf(slotKey);
    const epoch = connection.socketEpoch;
    const replied = Number(
      await connection.sendCommand(['WAIT', String(replicas), String(timeoutMs)], { ...RESP2_COMMAND_OPTIONS, timeout: undefined }),
    );
    if (connection.socketEpoch !== epoch) throw new Error('the connection was re-established while waiting for replicas');
    return replied;
  }

  openSubscriber(purpose: string): SubscriberConnection {
    if (this.target.kind === 'cluster') {
      // Only the shard subscribers it opens for SSUBSCRIBE, not a command connection to every master.
      const cluster = this.adopt(this.target.cluster.duplicate({ minimizeConnections: true }), purpose);
      return new NodeRedisSubscriber(
        { kind: 'cluster', cluster },
        (wait, action) => this.bounded(wait, action),
        () => this.release(cluster),
      );
    }
    const client = this.adopt(this.target.client.duplicate(), purpose);
    return new NodeRedisSubscriber(
      { kind: 'client', client },
      (wait, action) => this.bounded(wait, action),
      () => this.release(client),
    );
  }

  openBlockingReader(purpose: string): BlockingReader {
    if (this.target.kind === 'cluster') {
      const cluster = this.adopt(this.target.cluster.duplicate(withoutReconnect(this.target.cluster._options, true)), purpose);
      return new NodeRedisBlockingReader({ kind: 'cluster', cluster }, () => this.release(cluster));
    }
    const client = this.adopt(this.target.client.duplicate(withoutReconnect(this.target.client.options, false)), purpose);
    return new NodeRedisBlockingReader({ kind: 'client', client }, () => this.release(client));
  }

  openScratch(): ScratchConnection {
    // Not adopted: it must keep working after the module closed; its user closes it.
    if (this.target.kind === 'cluster') {
      const cluster = this.target.cluster.duplicate(withoutReconnect(this.target.cluster._options, true));
      cluster.on('error', () => undefined);
      return new NodeRedisScratch({ kind: 'cluster', cluster }, this.endpoint);
    }
    const client = this.target.client.duplicate(withoutReconnect(this.target.client.options, false));
    client.on('error', () => undefined);
    return new NodeRedisScratch({ kind: 'client', client }, this.endpoint);
  }

  /**
   * Connects (a connection built here, or a client the application has not connected yet) and
   * checks that Redis answers within `timeoutMs`. node-redis' `connect()` retries until it succeeds,
   * so the first connection error fails the check at once, as ioredis' first failed connect does.
   */
  async verify(timeoutMs: number): Promise<void> {
    const connection = this.connection;
    // A cluster reports its root nodes' failures as 'error', its node connections' as 'node-error'.
    const events = this.target.kind === 'cluster' ? ['error', 'node-error'] : ['error'];
    let timer: NodeJS.Timeout | undefined;
    let onError: ((error: Error) => void) | undefined;
    const failed = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      onError = (error: Error) => reject(asReplyError(error));
      for (const event of events) connection.on(event, onError);
    });
    try {
      if (!connection.isOpen) {
        const connecting = connection.connect();
        connecting.catch(() => undefined);
        await Promise.race([connecting, failed]);
      }
      await Promise.race([this.send(['PING'], 'ping Redis', false), failed]);
    } catch (error) {
      this.abandon();
      const cause = error instanceof Error ? error : undefined;
      const reason = cause ? describeConnectionCause(cause) : errorMessage(error);
      throw new RedisConnectionError(`Cannot reach Redis at ${this.endpoint}: ${reason}. ${connectionAdvice(error)}`, error);
    } finally {
      clearTimeout(timer);
      if (onError) for (const event of events) connection.off(event, onError);
    }
  }

  abandon(): void {
    if (this.owned) destroyNodeRedis(this.connection);
  }

  /**
   * Runs one command on every master, each bounded by `timeoutMs`; a failure is that server's entry.
   */
  async commandOnEveryMaster<T = unknown>(
    timeoutMs: number,
    name: string,
    ...args: Array<string | number>
  ): Promise<Array<ServerReply<T>>> {
    const full = [name, ...args.map(String)];
    let servers: Array<{ endpoint: string; client: NodeRedisClient }>;
    try {
      servers = await withTimeout(this.masterClients(), timeoutMs, 'the cluster topology');
    } catch (error) {
      return [{ endpoint: this.endpoint, error: asReplyError(error) as Error }];
    }
    return Promise.all(
      servers.map(async ({ endpoint, client }): Promise<ServerReply<T>> => {
        try {
          const reply = await withTimeout(
            client.sendCommand(full, RESP2_COMMAND_OPTIONS),
            timeoutMs,
            `${name.toUpperCase()} on ${endpoint}`,
          );
          return { endpoint, reply: resp2Shape(name, reply) as T };
        } catch (error) {
          return { endpoint, error: asReplyError(error) as Error };
        }
      }),
    );
  }

  /**
   * Closes what the transport opened: the dedicated connections at once (they carry no writes), the
   * command connection it built with node-redis' `close()` (the replies of commands already sent
   * are read first) by `deadline`, then `destroy()`. A client of the application is left open.
   */
  async close(deadline: number): Promise<void> {
    this.closed = true;
    for (const copy of this.dedicated) destroyNodeRedis(copy);
    this.dedicated.clear();
    this.outage?.stop();
    this.clusterOutage?.stop();
    for (const outage of this.nodeOutages.values()) outage.stop();
    this.nodeOutages.clear();
    const connection = this.connection;
    if (this.owned && connection.isOpen) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - performance.now()))));
      const closing = connection.close().catch(() => undefined);
      await Promise.race([closing, late]);
      clearTimeout(timer);
      destroyNodeRedis(connection);
    }
    for (const detach of this.detach.splice(0)) detach();
  }

  /** Sends one command on the command connection (routed by its first key on a cluster), its reply in RESP2 shape. */
  private async send<T>(args: readonly string[], action: string, reshape: boolean): Promise<T> {
    this.openIfIdle();
    const name = args[0];
    let options: NodeRedisCommandOptions;
    let outage: NodeRedisOutageBound | undefined;
    let reply: unknown;
    try {
      if (this.target.kind === 'client') {
        outage = this.outage;
        options = outage ? outage.commandOptions(action) : RESP2_COMMAND_OPTIONS;
        reply = await this.withinSilence(this.target.client.sendCommand(args, options), action);
      } else {
        const key = firstKeyOf(name, args.slice(1));
        outage = this.nodeOutageFor(key);
        options = outage ? outage.commandOptions(action) : RESP2_COMMAND_OPTIONS;
        reply = await this.withinSilence(this.target.cluster.sendCommand(key, false, args, options), action);
      }
    } catch (error) {
      if (outage && isAbortedCommand(error)) throw outage.failure(action);
      throw asReplyError(error);
    }
    return (reshape ? resp2Shape(name, reply) : reply) as T;
  }

  /**
   * Stops waiting for a reply after the silence bound (`unreachableTimeout` plus the longest command
   * the module keeps the connection silent with): node-redis waits for a written command's reply as
   * long as the socket stays open, which a stalled network or a paused server keeps it. Only the wait
   * ends: the command stays in node-redis' queue, so a late reply is still read in order (an unknown
   * outcome, as a lost reply: every script is safe to run twice).
   */
  private withinSilence<T>(reply: Promise<T>, action: string): Promise<T> {
    if (this.bound === undefined) return reply;
    const silence = this.bound + (this.policy.longestBlockingCommand ?? 0);
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const why = `no reply within ${silence} ms on an open connection (a stalled network or a paused server)`;
        reject(new RedisConnectionError(`Redis at ${this.endpoint} did not answer while trying to ${action}: ${why}.`));
      }, silence);
    });
    return Promise.race([reply, silent]).finally(() => clearTimeout(timer));
  }

  /** One command on one server's client (a master's, on a cluster), bounded; failures as typed errors. */
  /**
   * Starts connecting a connection built here that nobody connected yet (bootstrap skips `verify`
   * with `connectTimeout: 0`): node-redis refuses commands on a client never opened, where ioredis
   * connects a lazy client on its first command. Commands sent meanwhile wait in its offline queue,
   * bounded like any outage.
   */
  private openIfIdle(): void {
    if (!this.owned || this.closed || this.connection.isOpen) return;
    this.connection.connect().catch(() => undefined);
  }

  private async sendTo(client: NodeRedisClient, args: readonly string[], action: string): Promise<unknown> {
    const outage = this.target.kind === 'client' ? this.outage : this.outageOfNode(client);
    try {
      return await client.sendCommand(args, outage ? outage.commandOptions(action) : RESP2_COMMAND_OPTIONS);
    } catch (error) {
      if (outage && isAbortedCommand(error)) throw outage.failure(action);
      throw toRedisLockError(asReplyError(error), action);
    }
  }

  /**
   * The bound of the slot master's node client (watched from the first time it is seen), or of
   * the cluster as a whole while its topology is unknown.
   */
  private nodeOutageFor(key: string | undefined): NodeRedisOutageBound | undefined {
    if (this.bound === undefined || this.target.kind !== 'cluster') return undefined;
    const cluster = this.target.cluster;
    const client = key === undefined ? undefined : cluster.slots[calculateSlot(key)]?.master.client;
    return client ? this.outageOfNode(client) : this.clusterOutage;
  }

  private outageOfNode(client: NodeRedisClient): NodeRedisOutageBound | undefined {
    if (this.bound === undefined) return undefined;
    let outage = this.nodeOutages.get(client);
    if (!outage) {
      outage = new NodeRedisOutageBound(client, this.endpoint, this.bound);
      this.nodeOutages.set(client, outage);
    }
    return outage;
  }

  /** The master node client of `key`'s slot. */
  private async masterOf(key: string): Promise<NodeRedisClient> {
    if (this.target.kind === 'client') return this.target.client;
    const known = this.target.cluster.slots[calculateSlot(key)]?.master.client;
    return known ?? this.target.cluster.getNodeClientForKey(key, false);
  }

  /** The client of every server that holds data: the one client, or each master's. */
  private async masterClients(): Promise<Array<{ endpoint: string; client: NodeRedisClient }>> {
    this.openIfIdle();
    if (this.target.kind === 'client') return [{ endpoint: this.endpoint, client: this.target.client }];
    const cluster = this.target.cluster;
    return Promise.all(
      cluster.masters.map(async (master) => ({ endpoint: `${master.host}:${master.port}`, client: await cluster.nodeClient(master) })),
    );
  }

  /** A wait for a connection, failed with the connection's cause once the bound passed (none: as long as it takes). */
  private async bounded<T>(wait: Promise<T>, action: string): Promise<T> {
    if (this.bound === undefined) return wait;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            this.outage?.failure(action) ?? new RedisConnectionError(`Redis at ${this.endpoint} did not answer while trying to ${action}.`),
          ),
        this.bound,
      );
    });
    try {
      return await Promise.race([wait, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A dedicated copy: its errors reported with its purpose, closed with the transport. */
  private adopt<C extends NodeRedisClient | NodeRedisCluster>(copy: C, purpose: string): C {
    copy.on('error', (error: Error) => this.policy.onConnectionError(purpose, asReplyError(error) as Error, true));
    this.dedicated.add(copy);
    return copy;
  }

  /** Closes one dedicated connection early (a blocking reader found lost, a subscriber let go). */
  private release(copy: NodeRedisClient | NodeRedisCluster): Promise<void> {
    this.dedicated.delete(copy);
    destroyNodeRedis(copy);
    return Promise.resolve();
  }
}

function isCluster(connection: NodeRedisClient | NodeRedisCluster): connection is NodeRedisCluster {
  return Array.isArray((connection as Partial<NodeRedisCluster>).masters);
}

/**
 * A connection built from options: node-redis' own settings, except where they are left unset:
 * reconnecting like the module's other connections (25 ms doubling to 1 s, plus jitter: see
 * `lockReconnectStrategy`; node-redis' default grows to 2 s), and a connect attempt bounded by
 * `unreachableTimeout` (node-redis' default: 5 s). On a cluster these go to `defaults`, which
 * every node connection is made from.
 */
function buildTarget(
  source: { options: NodeRedisClientOptions | NodeRedisClusterOptions; cluster: boolean },
  unreachable: number | false,
): NodeRedisClient | NodeRedisCluster {
  const redis = packageRequire('redis') as NodeRedisPackage;
  const socketOf = (socket: NodeRedisSocketOptions | undefined): NodeRedisSocketOptions => ({
    ...socket,
    reconnectStrategy: socket?.reconnectStrategy ?? ((retries: number) => lockReconnectStrategy(retries + 1)),
    connectTimeout: socket?.connectTimeout ?? (unreachable === false ? undefined : unreachable),
  });
  if (source.cluster) {
    const options = source.options as NodeRedisClusterOptions;
    return redis.createCluster({ ...options, defaults: { ...options.defaults, socket: socketOf(options.defaults?.socket) } });
  }
  const options = source.options as NodeRedisClientOptions;
  return redis.createClient({ ...options, socket: socketOf(options.socket) });
}

/** `duplicate()` overrides for a copy that never reconnects: its socket settings with `reconnectStrategy: false`. */
function withoutReconnect(
  options: (NodeRedisClientOptions & NodeRedisClusterOptions) | NodeRedisClientOptions | NodeRedisClusterOptions | undefined,
  cluster: boolean,
): Record<string, unknown> {
  if (cluster) {
    const defaults = (options as NodeRedisClusterOptions | undefined)?.defaults;
    return { defaults: { ...defaults, socket: { ...defaults?.socket, reconnectStrategy: false } } };
  }
  return { socket: { ...(options as NodeRedisClientOptions | undefined)?.socket, reconnectStrategy: false } };
}

async function withTimeout<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer for ${what} within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
