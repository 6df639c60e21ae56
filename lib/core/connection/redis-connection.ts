import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { REDIS_LOCK_CONFIG, type RedisClient, type RedisLockConfig } from '../options/redis-lock-config.js';
import { QUIT_TIMEOUT_MS } from '../redis/close-quietly.js';
import { enforceEvictionPolicy } from '../redis/eviction-policy-check.js';
import { createTransport } from './create-transport.js';
import { resendCutOffScript } from './resend-cut-off-script.js';
import { IoredisTransport } from '../redis/ioredis-transport.js';
import { RedisOutageLog } from '../redis/outage-log.js';
import type { RedisScript } from '../redis/redis-script.js';
import type {
  BlockingReader,
  ConnectionReachability,
  ModuleTransport,
  RedisTransport,
  ScannedKeys,
  ScratchConnection,
  SubscriberConnection,
} from '../redis/redis-transport.js';
import { transportSourceOf } from '../options/transport-source.js';

/** How long a cut-off script waits for its connection when `unreachableTimeout` is false (the module's default bound). */
const DEFAULT_RESEND_WAIT_MS = 2_000;

/** How long the command client's QUIT may still wait once the module's shutdown budget is spent. */
const CLOSE_GRACE_MS = 250;

/** How long the policy check waits for an answer when it runs after bootstrap (connectTimeout 0). */
const EVICTION_CHECK_TIMEOUT_MS = 10_000;

/**
 * The module's Redis connection: the transport (`RedisTransport`, the one owner of the driver's
 * connections and of everything wrapping their commands) with the module's lifecycle around it:
 * the bootstrap checks, the outage log, and closing within the shutdown budget. The rest of lib/
 * reaches Redis through this class's `RedisTransport` methods.
 *
 * A client the user passed in is never closed here; every connection the transport created is
 * closed in `onApplicationShutdown`, which Nest runs after every `beforeApplicationShutdown` hook, so
 * the lock and queue services have stopped using them by then.
 */
@Injectable()
export class RedisConnection implements RedisTransport, OnModuleInit, OnModuleDestroy, OnApplicationShutdown {
  private readonly transport: ModuleTransport;
  /**
   * Whether the command connection reaches Redis and why not; with the module's bound on waiting
   * for an unreachable Redis on connections it built (`unreachableTimeout`). None on a cluster.
   */
  readonly reachability: ConnectionReachability | undefined;
  readonly resendsUnanswered: boolean;
  readonly isCluster: boolean;
  readonly publishCommand: 'publish' | 'spublish';
  private readonly logger = new Logger('RedisLockModule');
  /** Monotonic ms at which the application's shutdown began, once it has. */
  private shutdownStartedAt?: number;

  /**
   * The log of this connection's outages: every component reports its failed Redis calls here
   * rather than warning on its own, so an outage reads as one line when Redis becomes unreachable
   * and one when it is back (see `RedisOutageLog`).
   */
  readonly outages: RedisOutageLog;

  /** How long a script cut off by a dropped connection waits for it to be back before failing (see `runScript`). */
  private readonly resendWaitMs: number;

  constructor(@Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig) {
    this.resendWaitMs = config.unreachableTimeout === false ? DEFAULT_RESEND_WAIT_MS : config.unreachableTimeout;
    // ioredis prints "Unhandled error event" without a listener; its errors go to the outage log
    // instead: the first of an outage begins it (one WARN naming the cause), the rest are counted,
    // and a hiccup of one connection alone is logged at most once a second (`warnAlone`).
    this.transport = createTransport(transportSourceOf(config.redis), {
      unreachableTimeout: config.unreachableTimeout,
      longestBlockingCommand: config.lock.syncReplicas?.timeout,
      onConnectionError: (purpose, error, warnAlone) => this.outages.connectionError(purpose, error, warnAlone),
    });
    const transport = this.transport;
    this.resendsUnanswered = transport.resendsUnanswered;
    this.isCluster = transport.isCluster;
    this.publishCommand = transport.publishCommand;
    const reachability = (this.reachability = transport.reachability);
    this.outages = new RedisOutageLog(this.logger, {
      endpoint: transport.endpoint,
      isDown: () => (reachability ? reachability.isDown || reachability.isUnreachable : !transport.ready),
      waitBound: reachability?.waitBound,
    });
    if (reachability) {
      reachability.onUnreachable(() => this.outages.unreachable(reachability.cause));
      reachability.onReachable(() => this.outages.reachable());
    } else {
      transport.onReady(() => this.outages.reachable());
    }
  }

  /**
   * Runs a script; on a driver that rejects a command cut off by a dropped connection (node-redis,
   * GLIDE), the script is sent again once the connection is back, as ioredis does by itself
   * (see `resendCutOffScript`).
   */
  runScript<T = unknown>(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    const run = this.transport.runScript<T>(script, keys, args);
    if (this.transport.resendsUnanswered) return run;
    const until = performance.now() + this.resendWaitMs;
    const again = () => this.transport.runScript<T>(script, keys, args);
    return run.catch((error: unknown) => resendCutOffScript(this.transport, error, until, again));
  }

  loadScripts(scripts: readonly RedisScript[]): Promise<void> {
    return this.transport.loadScripts(scripts);
  }

  scanKeys(pattern: string, maxKeys: number, maxCalls?: number): Promise<ScannedKeys> {
    return this.transport.scanKeys(pattern, maxKeys, maxCalls);
  }

  command<T = unknown>(name: string, ...args: Array<string | number>): Promise<T> {
    return this.transport.command<T>(name, ...args);
  }

  writeNow(): void {
    this.transport.writeNow();
  }

  waitForReplicas(slotKey: string, replicas: number, timeoutMs: number): Promise<number> {
    return this.transport.waitForReplicas(slotKey, replicas, timeoutMs);
  }

  /**
   * The ioredis (or iovalkey) client that carries the commands, for code that must reach the
   * driver itself (tests of ioredis behaviour); throws on the other drivers.
   */
  get client(): RedisClient {
    if (this.transport instanceof IoredisTransport) return this.transport.client;
    throw new Error('RedisConnection.client: the module speaks through another driver than ioredis');
  }

  /** Closed for good: nothing will be sent on the command connection again. */
  get ended(): boolean {
    return this.transport.ended;
  }

  /** A short-lived connection of its own to the same server(s) (see `ModuleTransport.openScratch`). */
  openScratch(): ScratchConnection {
    return this.transport.openScratch();
  }

  openSubscriber(purpose: string): SubscriberConnection {
    return this.transport.openSubscriber(purpose);
  }

  openBlockingReader(purpose: string): BlockingReader {
    return this.transport.openBlockingReader(purpose);
  }

  /**
   * Calls `listener` each time the command connection becomes unreachable (lost for longer than
   * `unreachableTimeout`): calls waiting for something else than a reply (a parked acquire) can then
   * stop waiting. Returns the unsubscribe.
   */
  onUnreachable(listener: () => void): () => void {
    return this.transport.reachability?.onUnreachable(listener) ?? (() => undefined);
  }

  async onModuleInit(): Promise<void> {
    if (this.config.connectTimeout === 0) {
      this.outages.start();
      this.checkEvictionPolicyWhenReady();
      return;
    }
    await this.transport.verify(this.config.connectTimeout);
    await this.checkEvictionPolicy(this.config.connectTimeout, true);
    this.outages.start();
  }

  /**
   * Refuses (or warns about) a Redis that may evict keys: see the `evictionPolicyCheck` option.
   * At bootstrap an 'error' throws; later (connectTimeout 0) it can only be logged as an error.
   */
  private async checkEvictionPolicy(timeoutMs: number, atBootstrap: boolean): Promise<void> {
    try {
      await enforceEvictionPolicy([this.transport], {
        mode: this.config.evictionPolicyCheck,
        timeoutMs,
        logger: this.logger,
        canThrow: atBootstrap,
      });
    } catch (error) {
      this.transport.abandon();
      throw error;
    }
  }

  private checkEvictionPolicyWhenReady(): void {
    if (this.config.evictionPolicyCheck === 'off') return;
    const check = () => void this.checkEvictionPolicy(EVICTION_CHECK_TIMEOUT_MS, false).catch(() => undefined);
    if (this.transport.ready) {
      check();
      return;
    }
    let checked = false;
    this.transport.onReady(() => {
      if (checked) return;
      checked = true;
      check();
    });
  }

  /**
   * Nest lifecycle hook: notes when the shutdown began (the module's budget counts from here).
   * Nest runs every module's `onModuleDestroy` before any `beforeApplicationShutdown`, where the
   * services start their drains and hand-backs.
   */
  onModuleDestroy(): void {
    this.shutdownStartedAt ??= performance.now();
  }

  /** Ms left of the module's shutdown budget (`delayQueue.shutdownTimeout` from `onModuleDestroy`; all of it before). */
  shutdownBudgetLeft(): number {
    const startedAt = this.shutdownStartedAt ?? performance.now();
    return Math.max(0, startedAt + this.config.delayQueue.shutdownTimeout - performance.now());
  }

  /** Closes the transport (`close`, with the module's deadline). */
  onApplicationShutdown(): Promise<void> {
    const now = performance.now();
    const budgetEnd = (this.shutdownStartedAt ?? now) + this.config.delayQueue.shutdownTimeout;
    return this.close(Math.min(now + QUIT_TIMEOUT_MS, Math.max(now + CLOSE_GRACE_MS, budgetEnd)));
  }

  /**
   * Closes every connection the transport created, within `QUIT_TIMEOUT_MS` at most and within
   * `CLOSE_GRACE_MS` once the module's shutdown budget (`delayQueue.shutdownTimeout`, from
   * `onModuleDestroy`) is spent, whatever Redis does: the whole shutdown then takes that budget plus
   * a fraction of a second (see `IoredisTransport.close`).
   */
  async close(deadline: number): Promise<void> {
    const closing = this.transport.close(deadline);
    this.outages.stop();
    await closing;
  }
}
