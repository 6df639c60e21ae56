import type { GlideClientConfiguration, GlideClusterClient, Routes } from '@valkey/valkey-glide';
import { InvalidOptionsError } from '../../errors/invalid-options.error.js';
import { RedisConnectionError } from '../../errors/redis-connection.error.js';
import { connectionAdvice, toRedisLockError } from '../redis-errors.js';
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
import { GlideBlockingReader } from './glide-blocking-reader.js';
import { isGlideClusterClient } from './glide-client-detection.js';
import { probeEndpoint } from './glide-endpoint-probe.js';
import { connectionCauseOf, isClosedClient, isConnectionFailure, toReplyError } from './glide-errors.js';
import type { GlidePush } from './glide-internals.js';
import { cutClient, inflightLimitOf, interceptPushes } from './glide-internals.js';
import { InflightGate, runAdmitted } from './glide-inflight-gate.js';
import type { GlideCommandClient, GlideConfig } from './glide-package.js';
import { glidePackage } from './glide-package.js';
import { toResp2Reply } from './glide-replies.js';
import { clusterMasters, scanKeysOn } from './glide-scan.js';
import { GlideScratch } from './glide-scratch.js';
import { invokeScriptOn } from './glide-script-runner.js';
import { GlideSubscriber } from './glide-subscriber.js';

/** Where the transport's GLIDE clients come from. */
export interface GlideTransportSource {
  /** A client the user owns (standalone or cluster): commands go to it; never closed here. */
  readonly client?: GlideCommandClient;
  /**
   * What builds the module's own connections (subscriber, blocking readers, scratch; and the
   * command client when there is no `client`): addresses, credentials, TLS, database. `clusterMode`:
   * a cluster (default: whether `client` is a `GlideClusterClient`, else false).
   */
  readonly config: GlideConfig & { readonly clusterMode?: boolean };
}

/** Reconnection of the clients built here: 25 ms doubling, at most 1.6 s apart (GLIDE's own default backs off longer). */
const RECONNECT_BACKOFF = { numberOfRetries: 6, factor: 25, exponentBase: 2, jitterPercent: 25 };
/** How often a command client found down is pinged until it answers again. */
const REPROBE_MS = 250;
/** How long naming the cause of a failed connection may take (a TCP connect to the endpoint). */
const PROBE_MS = 250;
/** How long a request GLIDE refuses for its in-flight limit is tried again without a bound from the module. */
const DEFAULT_ADMISSION_MS = 2_000;
/** Request timeout of a scratch connection. */
const SCRATCH_TIMEOUT_MS = 3_000;

/**
 * The Valkey GLIDE transport (`@valkey/valkey-glide` 2.5, an optional peer loaded on first use).
 * GLIDE clients are created asynchronously and have no `duplicate()`: the constructor creates
 * nothing; the command client (unless the user passed one) is created on `verify()` or on the
 * first call, which waits for it, and every dedicated connection is built from `config`.
 *
 * GLIDE differs from ioredis in ways this class keeps inside:
 * - a request cut off by a dropped connection rejects (ConnectionError), never sent again
 *   (`resendsUnanswered: false`); with Redis down a request fails after GLIDE's request timeout,
 *   set here to `unreachableTimeout` on the clients built here (GLIDE's default is 250 ms);
 * - GLIDE emits no connection events: the command client counts as down from a connection failure
 *   of a call until a PING (sent every `REPROBE_MS` meanwhile) answers, which is when `onReady`
 *   listeners run; `reachability` is undefined;
 * - replies are reshaped to RESP2 (glide-replies.ts) and error replies reworded back to the
 *   server's text (glide-errors.ts); scripts run through GLIDE's `invokeScript` (glide-script-runner.ts).
 */
export class GlideTransport implements ModuleTransport {
  readonly resendsUnanswered = false;
  readonly isCluster: boolean;
  readonly publishCommand: 'publish' | 'spublish';
  readonly endpoint: string;
  readonly reachability = undefined;
  /** Whether the transport built its command client (else it is the user's). */
  readonly owned: boolean;
  private readonly config: GlideConfig;
  private commandClient: GlideCommandClient | undefined;
  private creating: Promise<GlideCommandClient> | undefined;
  private readonly dedicated = new Set<{ close(): Promise<void> }>();
  private readonly readyListeners: Array<() => void> = [];
  private isReady = false;
  private down = false;
  private closed = false;
  private userClientEnded = false;
  /** Connection failures seen on the command client: a WAIT is trusted only if none happened while it ran. */
  private losses = 0;
  /** The command client's requests in flight (GLIDE refuses more than its limit instead of queueing them). */
  private gate: InflightGate | undefined;
  private reprobeTimer: NodeJS.Timeout | undefined;

  constructor(
    source: GlideTransportSource,
    private readonly policy: TransportPolicy,
  ) {
    const { clusterMode, ...config } = source.config;
    this.config = config;
    this.commandClient = source.client;
    this.owned = !source.client;
    this.isCluster = clusterMode ?? (source.client ? isGlideClusterClient(source.client) : false);
    this.publishCommand = this.isCluster ? 'spublish' : 'publish';
    this.endpoint = config.addresses.map((a) => `${a.host}:${a.port ?? 6379}`).join(',');
    if (source.client) {
      this.isReady = true;
      this.gate = new InflightGate(inflightLimitOf(source.client));
    }
  }

  get ready(): boolean {
    return this.isReady && !this.down && !this.ended;
  }

  get ended(): boolean {
    return this.closed || this.userClientEnded;
  }

  onReady(listener: () => void): void {
    this.readyListeners.push(listener);
  }

  runScript<T = unknown>(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    return this.call(`run ${script.name}`, (client) => invokeScriptOn<T>(client, script, keys, args));
  }

  /** SCRIPT LOAD on every master: `invokeScript` loads a missing script by itself, so this only saves that round trip. */
  async loadScripts(scripts: readonly RedisScript[]): Promise<void> {
    for (const script of scripts) await this.commandOnServers('load scripts', ['SCRIPT', 'LOAD', script.source]);
  }

  scanKeys(pattern: string, maxKeys: number, maxCalls?: number): Promise<ScannedKeys> {
    return this.call(`scan for ${pattern}`, (client) => scanKeysOn(client, this.isCluster, pattern, maxKeys, maxCalls));
  }

  /** Routed by GLIDE by the command's first key on a cluster; a command without arguments (PING, TIME) to any node. */
  command<T = unknown>(name: string, ...args: Array<string | number>): Promise<T> {
    const route: Routes | undefined = this.isCluster && args.length === 0 ? 'randomNode' : undefined;
    return this.call(`run ${name}`, (client) =>
      this.send(client, [name, ...args.map(String)], route).then((reply) => toResp2Reply(name, reply) as T),
    );
  }

  /** GLIDE writes each request as it is made: nothing is held back. */
  writeNow(): void {}

  /**
   * WAIT on the connection that carried `slotKey`'s writes (the slot's master on a cluster). A drop
   * while WAIT runs rejects it (GLIDE does not send it again); a reconnect between the write's
   * reply and WAIT being sent, which no call saw fail, cannot be told through GLIDE's API: the WAIT
   * would then count a fresh connection's writes. Rejects when any call on the command client failed
   * for its connection while WAIT ran.
   */
  waitForReplicas(slotKey: string, replicas: number, timeoutMs: number): Promise<number> {
    const route: Routes | undefined = this.isCluster ? { type: 'primarySlotKey', key: slotKey } : undefined;
    const losses = this.losses;
    return this.call('wait for replicas', async (client) => {
      const replied = Number(await this.send(client, ['WAIT', String(replicas), String(timeoutMs)], route));
      if (this.losses !== losses) throw new Error('the connection was re-established while waiting for replicas');
      return replied;
    });
  }

  openSubscriber(purpose: string): SubscriberConnection {
    const subscriber = new GlideSubscriber(
      (onPush) => this.createDedicated(purpose, { onPush }),
      this.isCluster,
      (s) => this.dedicated.delete(s),
    );
    this.dedicated.add(subscriber);
    return subscriber;
  }

  openBlockingReader(purpose: string): BlockingReader {
    const reader = new GlideBlockingReader(
      () => this.createDedicated(purpose, {}),
      (r) => this.dedicated.delete(r),
    );
    this.dedicated.add(reader);
    return reader;
  }

  openScratch(): ScratchConnection {
    return new GlideScratch(() => this.createClient({ requestTimeout: SCRATCH_TIMEOUT_MS }), this.isCluster);
  }

  async commandOnEveryMaster<T = unknown>(
    timeoutMs: number,
    name: string,
    ...args: Array<string | number>
  ): Promise<Array<ServerReply<T>>> {
    const command = [name, ...args.map(String)];
    let client: GlideCommandClient;
    let targets: Array<{ endpoint: string; route?: Routes }>;
    try {
      client = await withTimeout(this.ensureClient(`run ${name}`), timeoutMs);
      targets = this.isCluster ? await withTimeout(clusterMasters(client as GlideClusterClient), timeoutMs) : [{ endpoint: this.endpoint }];
    } catch (error) {
      return [{ endpoint: this.endpoint, error: toRedisLockError(toReplyError(error), `run ${name}`) as Error }];
    }
    return Promise.all(
      targets.map(async ({ endpoint, route }): Promise<ServerReply<T>> => {
        try {
          return { endpoint, reply: toResp2Reply(name, await withTimeout(this.send(client, command, route), timeoutMs)) as T };
        } catch (error) {
          return { endpoint, error: toRedisLockError(toReplyError(error), `run ${name} on ${endpoint}`) as Error };
        }
      }),
    );
  }

  /**
   * Creates the command client (when it is the transport's) and checks that Redis answers a PING
   * within `timeoutMs`; rejects with `RedisConnectionError` naming the cause (refused, unknown
   * host, authentication, no answer). A client built here is closed when the check fails.
   */
  async verify(timeoutMs: number): Promise<void> {
    try {
      const client = await withTimeout(this.ensureClient('connect'), timeoutMs);
      const route: Routes | undefined = this.isCluster ? 'randomNode' : undefined;
      await withTimeout(this.send(client, ['PING'], route), timeoutMs);
      if (!this.owned && !this.isCluster) await withTimeout(this.checkSameDatabase(client), timeoutMs);
      this.markUp();
    } catch (error) {
      if (error instanceof InvalidOptionsError) throw error;
      this.abandon();
      const cause = error instanceof RedisConnectionError ? undefined : await this.causeOf(error);
      if (!cause) throw error;
      throw new RedisConnectionError(`Cannot reach Redis at ${this.endpoint}: ${cause}. ${connectionAdvice(cause)}`, error);
    }
  }

  /**
   * The user's client and the module's own connections (built from `url`/`addresses`) must be on one
   * database: commands would write jobs where the blocking reader and subscriber never look. GLIDE
   * keeps a client's `databaseId` private, so the client is asked (CLIENT INFO's `db=`).
   */
  private async checkSameDatabase(client: GlideCommandClient): Promise<void> {
    const info = await this.send(client, ['CLIENT', 'INFO'], undefined);
    const text = typeof info === 'string' ? info : Buffer.isBuffer(info) ? info.toString() : String(info);
    const used = Number(/(?:^|\s)db=(\d+)/.exec(text)?.[1] ?? 0);
    const configured = Number((this.config as { databaseId?: number }).databaseId ?? 0);
    if (used !== configured) {
      throw new InvalidOptionsError(
        'redis.url',
        `the GLIDE client passed in uses database ${used}, but the module's own connections (from \`url\`/\`addresses\`) ` +
          `would use database ${configured}: jobs would be written where its consumers never look. Put the database in the ` +
          `URL (redis://host:port/${used})`,
      );
    }
  }

  abandon(): void {
    if (!this.owned) return;
    // Nothing is created again for it: the module gave it up (a failed bootstrap check).
    clearTimeout(this.reprobeTimer);
    this.down = false;
    const client = this.commandClient;
    this.commandClient = undefined;
    this.isReady = false;
    if (client) cutClient(client);
    else void this.creating?.then(cutClient, () => undefined);
    this.creating = undefined;
  }

  /**
   * Closes every connection the transport built: the dedicated ones at once, the command client
   * once the calls on it have their replies or at `deadline`, whichever comes first. A user's
   * client is left open.
   */
  async close(deadline: number): Promise<void> {
    this.closed = true;
    clearTimeout(this.reprobeTimer);
    const closing = [...this.dedicated].map((connection) => connection.close().catch(() => undefined));
    this.dedicated.clear();
    if (this.owned) {
      const client =
        this.commandClient ?? (await withTimeout(this.creating ?? Promise.resolve(undefined), remaining(deadline)).catch(() => undefined));
      if (client) {
        await withTimeout(this.gate?.whenIdle() ?? Promise.resolve(), remaining(deadline)).catch(() => undefined);
        cutClient(client);
      } else {
        this.abandon();
      }
    }
    await Promise.all(closing);
  }

  /** One call on the command client: its connection state noted, its errors typed. */
  private async call<T>(action: string, run: (client: GlideCommandClient) => Promise<T>): Promise<T> {
    const client = await this.ensureClient(action);
    try {
      const result = await runAdmitted(this.gate as InflightGate, () => run(client), performance.now() + this.admissionBound());
      if (this.down) this.markUp();
      return result;
    } catch (error) {
      if (!isConnectionFailure(error)) throw toRedisLockError(toReplyError(error), action);
      throw toRedisLockError(error, action, await this.connectionFailed(error));
    }
  }

  /** How long a request refused for GLIDE's in-flight limit is tried again: the bound on an unreachable Redis. */
  private admissionBound(): number {
    return this.policy.unreachableTimeout === false ? DEFAULT_ADMISSION_MS : this.policy.unreachableTimeout;
  }

  private send(client: GlideCommandClient, args: string[], route: Routes | undefined): Promise<unknown> {
    const decoder = glidePackage().Decoder.String;
    return route ? (client as GlideClusterClient).customCommand(args, { route, decoder }) : client.customCommand(args, { decoder });
  }

  /** The command client; the transport's own is created on first use (calls made meanwhile wait for it). */
  private ensureClient(action: string): Promise<GlideCommandClient> {
    if (this.commandClient) return Promise.resolve(this.commandClient);
    if (this.closed)
      return Promise.reject(new RedisConnectionError(`Cannot ${action}: the Redis connection at ${this.endpoint} is closed.`));
    this.creating ??= this.createClient({}).then(
      (client) => {
        if (this.closed) {
          cutClient(client);
          throw new RedisConnectionError(`Cannot ${action}: the Redis connection at ${this.endpoint} is closed.`);
        }
        this.commandClient = client;
        this.gate = new InflightGate(inflightLimitOf(client));
        this.markUp();
        return client;
      },
      async (error: unknown) => {
        this.creating = undefined; // the next call tries again
        const cause = await this.connectionFailed(error);
        throw new RedisConnectionError(
          `Cannot reach Redis at ${this.endpoint} while trying to ${action}: ${cause}. ${connectionAdvice(cause)}`,
          error,
        );
      },
    );
    return this.creating;
  }

  /** A client built from `config`, with the module's bound on an unreachable Redis unless the config sets its own. */
  private async createClient(overrides: { requestTimeout?: number; onPush?: (push: GlidePush) => void }): Promise<GlideCommandClient> {
    const glide = glidePackage();
    const bound = this.policy.unreachableTimeout;
    const config: GlideConfig = {
      ...this.config,
      requestTimeout: overrides.requestTimeout ?? this.config.requestTimeout ?? (bound === false ? undefined : bound),
      connectionBackoff: this.config.connectionBackoff ?? RECONNECT_BACKOFF,
    };
    if (bound !== false && !this.config.advancedConfiguration?.connectionTimeout) {
      config.advancedConfiguration = { ...this.config.advancedConfiguration, connectionTimeout: Math.min(bound, 2_000) };
    }
    const onPush = overrides.onPush;
    if (onPush) {
      // GLIDE delivers pushes only to a client built with a callback, and only over RESP3.
      config.protocol = glide.ProtocolVersion.RESP3;
      config.pubsubSubscriptions = { channelsAndPatterns: {}, callback: () => undefined };
    }
    const client = this.isCluster
      ? await glide.GlideClusterClient.createClient(config)
      : await glide.GlideClient.createClient(config as GlideClientConfiguration);
    if (onPush) interceptPushes(client, onPush);
    return client;
  }

  /** A dedicated client for `purpose`, its connection errors reported to the module. */
  private async createDedicated(purpose: string, options: { onPush?: (push: GlidePush) => void }): Promise<GlideCommandClient> {
    try {
      return await this.createClient(options);
    } catch (error) {
      const cause = await this.causeOf(error);
      const failure = new RedisConnectionError(`Cannot reach Redis at ${this.endpoint} for ${purpose}: ${cause}.`, error);
      this.policy.onConnectionError(purpose, failure, true);
      throw failure;
    }
  }

  /** Notes a connection failure of the command client; returns its cause in words. */
  private async connectionFailed(error: unknown): Promise<string> {
    this.losses++;
    if (!this.owned && isClosedClient(error) && this.commandClient) this.userClientEnded = true;
    const cause = await this.causeOf(error);
    const failure = new Error(cause, { cause: error });
    this.policy.onConnectionError('commands', failure, this.owned);
    if (!this.down && !this.ended) {
      this.down = true;
      this.reprobe();
    }
    return cause;
  }

  /** GLIDE's cause, made precise by a TCP probe when GLIDE only says it timed out. */
  private async causeOf(error: unknown): Promise<string> {
    const cause = connectionCauseOf(error);
    if (!/timed out|timeout/i.test(cause)) return cause;
    const { host, port } = this.config.addresses[0];
    return probeEndpoint(host, port ?? 6379, PROBE_MS);
  }

  /**
   * While down, a PING every `REPROBE_MS` until one answers (then `onReady` listeners run); a
   * command client of the transport's that could not be created yet is created again instead.
   */
  private reprobe(): void {
    this.reprobeTimer = setTimeout(() => {
      const client = this.commandClient;
      if (this.ended || !this.down) return;
      if (!client) {
        if (this.owned) this.ensureClient('reconnect').catch(() => this.reprobe());
        return;
      }
      this.send(client, ['PING'], this.isCluster ? 'randomNode' : undefined).then(
        () => this.markUp(),
        (error: unknown) => {
          if (!this.owned && isClosedClient(error)) this.userClientEnded = true;
          this.reprobe();
        },
      );
    }, REPROBE_MS);
    this.reprobeTimer.unref();
  }

  private markUp(): void {
    const wasReady = this.isReady && !this.down;
    this.isReady = true;
    this.down = false;
    clearTimeout(this.reprobeTimer);
    if (!wasReady && !this.ended) for (const listener of this.readyListeners) listener();
  }

  /** A SCRIPT LOAD (or any command) on every server; the first failure rejects. */
  private async commandOnServers(action: string, command: string[]): Promise<void> {
    await this.call(action, async (client) => {
      if (!this.isCluster) return this.send(client, command, undefined);
      return this.send(client, command, 'allPrimaries');
    });
  }
}

/** Ms from now until `deadline` (monotonic), at least 0. */
function remaining(deadline: number): number {
  return Math.max(0, deadline - performance.now());
}

/** `promise`, or a rejection "no answer within N ms" after `ms`. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
