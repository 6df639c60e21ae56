import type { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { ioredisFlavour } from '../../core/redis/ioredis-flavour.js';
import type { RedlockClientOptions } from '../../core/options/redis-lock-module-options.interface.js';
import { isClientInstance } from '../../core/options/resolve-redlock-config.js';
import { closeQuietly } from '../../core/redis/close-quietly.js';
import { runScriptOn } from '../../core/redis/ioredis-script-runner.js';
import { preloadScripts } from '../../core/redis/preload-scripts.js';
import type { RedisScript } from '../../core/redis/redis-script.js';
import type { RedisTransport } from '../../core/redis/redis-transport.js';
import { reconnectOverrideFor, withLockReconnect } from '../../core/redis/reconnect-strategy.js';
import { assertSupportedClientOptions } from '../../core/redis/client-options-check.js';

/** How often one master's connection errors are logged at most, in ms. */
const ERROR_LOG_INTERVAL_MS = 5_000;

/** Releases kept for a master that is out of reach, to run once it is back (far more than ever pile up). */
const MAX_RELEASES_WHEN_BACK = 10_000;

/**
 * One independent Redis master of Redlock mode: its command connection and, once a waiter needs
 * it, its pub/sub connection.
 *
 * Command connections this module creates do not queue commands while the master is unreachable
 * (`enableOfflineQueue: false`): a master that is down must answer "no" at once, not hold a vote
 * (or a release) back until a reconnect, when the caller gave up on it long ago. They reconnect
 * with `lockReconnectStrategy` unless the options set a `retryStrategy`: a command whose reply was
 * lost in a blip is re-sent once the connection is back, and that reply only counts if it comes
 * within `requestTimeout`. Clients the user passed in are used as they are and never closed here.
 *
 * The quorum reaches the master through the transport's script and command calls, as the rest of
 * lib/ reaches the module's own connection; its ioredis client stays inside this class and the
 * bootstrap of `RedlockMasters`.
 */
export class RedlockMaster implements Pick<RedisTransport, 'runScript' | 'command' | 'loadScripts'> {
  readonly client: Redis;
  readonly owned: boolean;
  private pubSub?: Redis;
  private lastErrorLog = Number.NEGATIVE_INFINITY;
  private readonly whenBack = new Set<() => void>();

  constructor(
    options: RedlockClientOptions,
    readonly index: number,
    private readonly logger: Logger,
  ) {
    if (isClientInstance(options)) {
      assertSupportedClientOptions(options, { option: `redlock.clients[${index}]`, instance: true });
      this.client = options;
      this.owned = false;
    } else {
      const defaults = { lazyConnect: true, enableOfflineQueue: false };
      this.client =
        typeof options === 'string'
          ? new (ioredisFlavour('ioredis').Redis)(options, withLockReconnect(defaults))
          : new (ioredisFlavour('ioredis').Redis)(withLockReconnect({ ...defaults, ...options }));
      assertSupportedClientOptions(this.client, { option: `redlock.clients[${index}]`, instance: false });
      this.owned = true;
      this.logErrorsOf(this.client, 'commands');
    }
    this.client.on('ready', () => {
      if (this.whenBack.size === 0) return;
      const tasks = [...this.whenBack];
      this.whenBack.clear();
      // After ioredis has re-sent the commands that were in flight when the connection dropped
      // (it does so right after emitting 'ready'): a release must run after its hold's acquire.
      setImmediate(() => tasks.forEach((task) => task()));
    });
  }

  /**
   * Runs `task` once the command connection is ready again (a release that could not reach this
   * master). Dropped when the module closes, or beyond a bound: the hold's lease ends it then.
   */
  whenReconnected(task: () => void): void {
    if (this.whenBack.size < MAX_RELEASES_WHEN_BACK) this.whenBack.add(task);
  }

  runScript<T = unknown>(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    return runScriptOn<T>(this.client, script, keys, args);
  }

  command<T = unknown>(name: string, ...args: Array<string | number>): Promise<T> {
    return this.client.call(name, ...args) as Promise<T>;
  }

  loadScripts(scripts: readonly RedisScript[]): Promise<void> {
    return preloadScripts(this.client, scripts);
  }

  /** `host:port` of the master, for messages (never a password). */
  get label(): string {
    const o = this.client.options;
    return o.path ? `unix:${o.path}` : `${o.host}:${o.port}`;
  }

  /** Starts connecting a client that waits for its first command (lazyConnect); resolves when ready. */
  connect(): Promise<void> {
    return this.client.status === 'wait' ? this.client.connect() : Promise.resolve();
  }

  /** Resolves when the master answers PING. */
  async ping(): Promise<void> {
    await this.connect();
    await this.client.ping();
  }

  /** The pub/sub connection (created on first use, closed with the module even for a user's client). */
  subscriber(): Redis {
    if (!this.pubSub) {
      // FanOutSubscriber re-subscribes on every 'ready' itself: ioredis' own re-subscribe leaves its
      // SUBSCRIBE promise without a handler, an unhandled rejection when the connection drops again.
      this.pubSub = this.client.duplicate({
        lazyConnect: true,
        enableOfflineQueue: true,
        autoResubscribe: false,
        ...reconnectOverrideFor(this.client),
      });
      this.logErrorsOf(this.pubSub, 'subscriber');
    }
    return this.pubSub;
  }

  async close(): Promise<void> {
    this.whenBack.clear();
    const closing = [this.pubSub && closeQuietly(this.pubSub)];
    if (this.owned) closing.push(closeQuietly(this.client));
    await Promise.all(closing);
  }

  /** ioredis prints "Unhandled error event" without a listener; log through Nest, now and then. */
  private logErrorsOf(client: Redis, purpose: string): void {
    client.on('error', (error: Error) => {
      const now = performance.now();
      if (now - this.lastErrorLog < ERROR_LOG_INTERVAL_MS) return;
      this.lastErrorLog = now;
      this.logger.warn(`Redlock master ${this.index} (${this.label}) ${purpose} connection error: ${error.message}`);
    });
  }
}
