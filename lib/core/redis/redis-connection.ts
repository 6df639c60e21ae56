import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Cluster, type Redis } from 'ioredis';
import { RedisConnectionError } from '../errors/redis-connection.error.js';
import { REDIS_LOCK_CONFIG, type RedisClient, type RedisLockConfig } from '../options/redis-lock-config.js';
import { closeConnection, QUIT_TIMEOUT_MS } from './close-quietly.js';
import { createRedisClient, describeEndpoint, silenceTimeout } from './create-redis-client.js';
import { RedisReachability } from './reachability.js';
import { connectionAdvice, describeConnectionCause } from './redis-errors.js';
import { enforceEvictionPolicy } from './eviction-policy-check.js';
import { reconnectOverrideFor } from './reconnect-strategy.js';
import { observeAutomaticResends } from './observe-automatic-resends.js';
import { coalesceWritesPerTick } from './coalesce-writes.js';
import { assertSupportedClientOptions, redisOptionOrigin } from './client-options-check.js';
import { errorMessage } from '../errors/error-message.js';
import { SelectedDatabaseCheck } from './selected-database-check.js';
import { RedisOutageLog } from './outage-log.js';

/** How long the command client's QUIT may still wait once the module's shutdown budget is spent. */
const CLOSE_GRACE_MS = 250;

/** How long the policy check waits for an answer when it runs after bootstrap (connectTimeout 0). */
const EVICTION_CHECK_TIMEOUT_MS = 10_000;

/**
 * Owns the Redis connections of the module: the shared command client, and the extra connections
 * that must not carry ordinary commands (the pub/sub subscriber, blocking consumers).
 *
 * A client the user passed in is never closed here; every connection this class created is closed
 * in `onApplicationShutdown`, which Nest runs after every `beforeApplicationShutdown` hook, so the
 * lock and queue services have stopped using them by then.
 */
@Injectable()
export class RedisConnection implements OnModuleInit, OnModuleDestroy, OnApplicationShutdown {
  readonly client: RedisClient;
  private readonly ownsClient: boolean;
  private readonly dedicated = new Set<RedisClient>();
  private readonly logger = new Logger('RedisLockModule');
  /** Monotonic ms at which the application's shutdown began, once it has. */
  private shutdownStartedAt?: number;

  /**
   * Whether the command connection reaches Redis and why not; with the module's bound on waiting
   * for an unreachable Redis on connections it built (`unreachableTimeout`). None on a cluster.
   */
  readonly reachability: RedisReachability | undefined;

  /** Whether the command connection is on the configured database (none on a cluster: no SELECT there). */
  private readonly selectedDatabase: SelectedDatabaseCheck | undefined;

  /**
   * The log of this connection's outages: every component reports its failed Redis calls here
   * rather than warning on its own, so an outage reads as one line when Redis becomes unreachable
   * and one when it is back (see `RedisOutageLog`).
   */
  readonly outages: RedisOutageLog;

  constructor(@Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig) {
    const { client, owned } = createRedisClient(config.redis, { unreachableTimeout: config.unreachableTimeout });
    // Before anything uses it (a created client connects lazily, so there is nothing to close).
    assertSupportedClientOptions(client, redisOptionOrigin(config.redis));
    this.client = client;
    this.ownsClient = owned;
    const userOptions = typeof config.redis === 'object' && !('client' in config.redis) ? (config.redis as Record<string, unknown>) : {};
    if (client instanceof Cluster) {
      this.reachability = undefined;
      this.selectedDatabase = undefined;
    } else {
      this.selectedDatabase = new SelectedDatabaseCheck(client as Redis);
      // The bound only where the user left ioredis' queueing and timeouts alone: their own choice
      // wins. Not behind Sentinel: a failover (down-after-milliseconds plus the election, seconds)
      // is ridden out there, which is what Sentinel is deployed for.
      const timeout = config.unreachableTimeout;
      const bounded =
        owned &&
        timeout !== false &&
        !(client as Redis).options.sentinels?.length &&
        userOptions.maxRetriesPerRequest === undefined &&
        userOptions.enableOfflineQueue === undefined &&
        userOptions.socketTimeout === undefined;
      this.reachability = RedisReachability.watch(
        client,
        describeEndpoint(client),
        bounded ? { bound: timeout, silence: silenceTimeout(timeout, config.lock.syncReplicas?.timeout) } : undefined,
      );
    }
    const reachability = this.reachability;
    this.outages = new RedisOutageLog(this.logger, {
      endpoint: describeEndpoint(client),
      isDown: () => (reachability ? reachability.isDown || reachability.isUnreachable : client.status !== 'ready'),
      waitBound: reachability?.waitBound,
    });
    if (reachability) {
      reachability.onUnreachable(() => this.outages.unreachable(reachability.cause));
      reachability.onReachable(() => this.outages.reachable());
    } else {
      client.on('ready', () => this.outages.reachable());
    }
    // A client the application passed in: its errors begin and end outages, its hiccups are its own to log.
    this.logErrorsOf(client, 'commands', owned);
    if (owned) {
      if (client instanceof Cluster) {
        // Each node's command connection, including those the cluster opens later.
        client.on('+node', (node: Redis) => coalesceWritesPerTick(node));
        for (const node of client.nodes()) coalesceWritesPerTick(node);
      } else {
        observeAutomaticResends(client);
        coalesceWritesPerTick(client);
      }
    }
  }

  /**
   * Calls `listener` each time the command connection becomes unreachable (lost for longer than
   * `unreachableTimeout`): calls waiting for something else than a reply (a parked acquire) can then
   * stop waiting. Returns the unsubscribe.
   */
  onUnreachable(listener: () => void): () => void {
    return this.reachability?.onUnreachable(listener) ?? (() => undefined);
  }

  get isCluster(): boolean {
    return this.client instanceof Cluster;
  }

  /** Pub/sub needs SPUBLISH on a cluster (the message stays on the slot's shard), PUBLISH elsewhere. */
  get publishCommand(): 'publish' | 'spublish' {
    return this.isCluster ? 'spublish' : 'publish';
  }

  async onModuleInit(): Promise<void> {
    if (this.config.connectTimeout === 0) {
      this.outages.start();
      this.checkEvictionPolicyWhenReady();
      return;
    }
    await this.verifyReachable(this.client, this.config.connectTimeout);
    await this.verifySelectedDatabase(this.config.connectTimeout);
    await this.checkEvictionPolicy(this.config.connectTimeout, true);
    this.outages.start();
  }

  /**
   * Refuses (or warns about) a Redis that may evict keys: see the `evictionPolicyCheck` option.
   * At bootstrap an 'error' throws; later (connectTimeout 0) it can only be logged as an error.
   */
  private async checkEvictionPolicy(timeoutMs: number, atBootstrap: boolean): Promise<void> {
    try {
      await enforceEvictionPolicy([this.client], {
        mode: this.config.evictionPolicyCheck,
        timeoutMs,
        logger: this.logger,
        canThrow: atBootstrap,
      });
    } catch (error) {
      if (this.ownsClient && this.client.status !== 'end') this.client.disconnect();
      throw error;
    }
  }

  private checkEvictionPolicyWhenReady(): void {
    if (this.config.evictionPolicyCheck === 'off') return;
    const check = () => void this.checkEvictionPolicy(EVICTION_CHECK_TIMEOUT_MS, false).catch(() => undefined);
    if (this.client.status === 'ready') check();
    else this.client.once('ready', check);
  }

  /**
   * A new connection with the same settings, for a subscriber or a blocking reader. Closed with
   * the module even when the main client belongs to the user.
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
  duplicate(purpose: string, options: { shardedPubSub?: boolean } = {}): RedisClient {
    let copy: RedisClient;
    if (this.client instanceof Cluster) {
      copy = options.shardedPubSub ? this.client.duplicate([], { shardedSubscribers: true }) : this.client.duplicate();
    } else {
      copy = this.client.duplicate(reconnectOverrideFor(this.client));
      observeAutomaticResends(copy);
    }
    this.dedicated.add(copy);
    this.logErrorsOf(copy, purpose);
    return copy;
  }

  /** Closes one dedicated connection early (for example a blocking client found hung). */
  async release(copy: RedisClient): Promise<void> {
    this.dedicated.delete(copy);
    await closeConnection(copy, { quit: false });
  }

  /**
   * Nest lifecycle hook: notes when the shutdown began (the module's budget counts from here).
   * Nest runs every module's `onModuleDestroy` before any `beforeApplicationShutdown`, where the
   * services start their drains and hand-backs.
   */
  onModuleDestroy(): void {
    this.shutdownStartedAt ??= performance.now();
  }

  /**
   * Closes every connection this class created, all at once, within `QUIT_TIMEOUT_MS` at most and
   * within `CLOSE_GRACE_MS` once the module's shutdown budget (`delayQueue.shutdownTimeout`, from
   * `onModuleDestroy`) is spent, whatever Redis does: the whole shutdown then takes that
   * budget plus a fraction of a second. The dedicated connections (subscriber, blocking readers)
   * carry no writes and are cut at once; the command client gets a QUIT, so that replies to
   * commands already sent are read, unless none are awaited or Redis is known not to answer (see
   * `closeQuietly`). A reply not read in time is lost, not the command: what was written is
   * still sent before the socket closes.
   */
  async onApplicationShutdown(): Promise<void> {
    const now = performance.now();
    const budgetEnd = (this.shutdownStartedAt ?? now) + this.config.delayQueue.shutdownTimeout;
    const deadline = Math.min(now + QUIT_TIMEOUT_MS, Math.max(now + CLOSE_GRACE_MS, budgetEnd));
    const closing = [...this.dedicated].map((c) => closeConnection(c, { quit: false }));
    this.dedicated.clear();
    if (this.ownsClient) closing.push(closeConnection(this.client, { deadline }));
    this.reachability?.stop();
    this.outages.stop();
    await Promise.all(closing);
  }

  private async verifySelectedDatabase(timeoutMs: number): Promise<void> {
    try {
      await this.selectedDatabase?.verify(timeoutMs);
    } catch (error) {
      if (this.ownsClient && this.client.status !== 'end') this.client.disconnect();
      throw error;
    }
  }

  private async verifyReachable(client: RedisClient, timeoutMs: number): Promise<void> {
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
      const lastError = this.reachability?.lastConnectionError;
      const cause = lastError ?? (error instanceof Error ? error : undefined);
      if (this.ownsClient && client.status !== 'end') client.disconnect();
      const reason = cause ? describeConnectionCause(cause) : errorMessage(error);
      throw new RedisConnectionError(`Cannot reach Redis at ${describeEndpoint(client)}: ${reason}. ${connectionAdvice(cause ?? error)}`, cause ?? error);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * ioredis prints "Unhandled error event" without a listener; its errors go to the outage log
   * instead: the first of an outage begins it (one WARN naming the cause), the rest are counted, and
   * a hiccup of one connection alone is logged at most once a second (`warnAlone`).
   */
  private logErrorsOf(client: RedisClient, purpose: string, warnAlone = true): void {
    client.on('error', (error: Error) => this.outages.connectionError(purpose, error, warnAlone));
  }
}
