import type { RedisConnectionError } from '../errors/redis-connection.error.js';
import type { CommandWrite } from './reachability.js';
import type { RedisScript } from './redis-script.js';

/**
 * What the rest of lib/ asks of a Redis driver, and all it may ask. One implementation per driver:
 * `IoredisTransport` (ioredis-transport.ts) today; node-redis, iovalkey and Valkey GLIDE plug in
 * here (issue 38), each as one class that keeps its driver's differences inside:
 * - replies come in RESP2 shapes (a driver speaking RESP3 maps maps and pushes back: node-redis
 *   reshapes BZPOPMIN, for one);
 * - a script runs by SHA, its body sent only when the server answers NOSCRIPT, whatever the
 *   driver's wording of that error (GLIDE's differs; an ioredis Cluster wraps it);
 * - a command whose connection drops before its reply either is re-sent after the reconnect
 *   (ioredis) or rejects (node-redis, GLIDE): every script is safe to run twice, so both are
 *   correct, and `resendsUnanswered` says which one the callers get;
 * - a driver-wide request timeout (GLIDE: 250 ms by default) never applies to a blocking reader.
 */
export interface RedisTransport {
  /** Whether a command cut off by a dropped connection is sent again once it is back (else it rejects). */
  readonly resendsUnanswered: boolean;
  /** A Redis Cluster: keys of one call share a slot, pub/sub is sharded. */
  readonly isCluster: boolean;
  /** Pub/sub needs SPUBLISH on a cluster (the message stays on the slot's shard), PUBLISH elsewhere. */
  readonly publishCommand: 'publish' | 'spublish';
  /**
   * Runs `script` by its contract (its KEYS and ARGV): EVALSHA, and the body with EVAL only when
   * the server does not know it yet. Failures reject with the library's typed errors.
   */
  runScript<T = unknown>(script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): Promise<T>;
  /**
   * Loads `scripts` into the script cache of every server that runs them (each master of a cluster)
   * ahead of their first use. An optimisation only: `runScript` recovers from NOSCRIPT by itself.
   */
  loadScripts(scripts: readonly RedisScript[]): Promise<void>;
  /**
   * The keys matching a glob `pattern`, on every master of a cluster, at most `maxKeys` of them; at
   * most `maxCalls` SCAN calls per server (default 200), so one call never walks an unbounded
   * keyspace unless asked to (`Infinity`).
   */
  scanKeys(pattern: string, maxKeys: number, maxCalls?: number): Promise<ScannedKeys>;
  /** One command, by name (`'zadd'`, `'time'`, …), its reply in RESP2 shape. */
  command<T = unknown>(name: string, ...args: Array<string | number>): Promise<T>;
  /**
   * Sends the commands this turn has issued so far now, rather than when the turn ends, for a
   * caller about to do long synchronous work (nothing to do for a driver that does not batch).
   */
  writeNow(): void;
  /**
   * Waits (WAIT) until `replicas` replicas confirmed every write made so far on the connection that
   * carries `slotKey`'s commands; the number that did. Rejects when that connection was
   * re-established meanwhile (the answer would count a fresh connection's writes, i.e. none).
   */
  waitForReplicas(slotKey: string, replicas: number, timeoutMs: number): Promise<number>;
  /** A connection of its own for pub/sub (SSUBSCRIBE on a cluster), closed with the transport. */
  openSubscriber(purpose: string): SubscriberConnection;
  /** A connection of its own for blocking pops, with no request timeout, closed with the transport. */
  openBlockingReader(purpose: string): BlockingReader;
  /**
   * Whether the command connection reaches Redis, and why not; undefined where the transport cannot
   * tell (a cluster).
   */
  readonly reachability: ConnectionReachability | undefined;
  /**
   * Closes every connection the transport opened, the command connection by `deadline` (monotonic
   * ms) with the replies of commands already sent read first when Redis answers; never the user's client.
   */
  close(deadline: number): Promise<void>;
}

/**
 * A transport as the module holds it: `RedisTransport` plus its lifecycle (bootstrap check, readiness,
 * per-server commands, a scratch connection for the testing kit). `RedisConnection` owns one; the
 * factory (create-transport.ts) builds the one the options name.
 */
export interface ModuleTransport extends RedisTransport {
  /** Where it points, for messages; never includes a password. */
  readonly endpoint: string;
  /** Connected and ready for commands. */
  readonly ready: boolean;
  /** Closed for good (by the module, or the user closed their own client): nothing will be sent on it again. */
  readonly ended: boolean;
  /** Calls `listener` each time the command connection is ready (connected, or back after a loss). */
  onReady(listener: () => void): void;
  /**
   * Connects (a connection built here connects lazily) and checks that Redis answers within
   * `timeoutMs`; rejects with `RedisConnectionError` naming the cause (refused, unknown host,
   * authentication, no answer) and advice. A connection built here is disconnected when it fails.
   */
  verify(timeoutMs: number): Promise<void>;
  /** Disconnects the command connection when the transport built it (a failed bootstrap check). */
  abandon(): void;
  /**
   * Runs one command on every server that holds data: the one server, or each master of a cluster;
   * a server's failure (or no answer within `timeoutMs`) is its entry's `error`, never a rejection.
   */
  commandOnEveryMaster<T = unknown>(timeoutMs: number, name: string, ...args: Array<string | number>): Promise<Array<ServerReply<T>>>;
  /**
   * A short-lived connection of its own to the same server(s), independent of the module's (it keeps
   * working after the module closed): connects now, fails a command after a few seconds rather than
   * waiting for a server that is gone, and does not reconnect. For the testing kit's key removal.
   */
  openScratch(): ScratchConnection;
}

/** One server's answer to `ModuleTransport.commandOnEveryMaster`. */
export interface ServerReply<T> {
  /** The server, for messages (`host:port`). */
  readonly endpoint: string;
  readonly reply?: T;
  readonly error?: Error;
}

/** A connection for maintenance work (see `ModuleTransport.openScratch`). */
export interface ScratchConnection {
  /** As `RedisTransport.scanKeys`. */
  scanKeys(pattern: string, maxKeys: number, maxCalls?: number): Promise<ScannedKeys>;
  /** One command, routed by its first key on a cluster. */
  command<T = unknown>(name: string, ...args: Array<string | number>): Promise<T>;
  /** Closes it at once. */
  close(): Promise<void>;
}

/** What every transport needs from the module configuration. */
export interface TransportPolicy {
  /** Bound on waiting for an unreachable Redis (ms), or false (the driver's own settings decide). */
  readonly unreachableTimeout: number | false;
  /** The longest a command of the module legitimately keeps the connection silent (WAIT of `syncReplicas`), ms. */
  readonly longestBlockingCommand?: number;
  /** Every connection error, with the connection's purpose; `warnAlone`: a hiccup of this connection alone is worth a line. */
  readonly onConnectionError: (purpose: string, error: Error, warnAlone: boolean) => void;
}

/** Keys found by `RedisTransport.scanKeys`, and whether the scan stopped before it had seen the whole keyspace. */
export interface ScannedKeys {
  readonly keys: string[];
  readonly truncated: boolean;
}

/** Whether one connection reaches Redis, and why not (see `RedisReachability`, ioredis' implementation). */
export interface ConnectionReachability {
  /** Lost and not ready again. */
  readonly isDown: boolean;
  /** Lost (or silent) for longer than the bound: calls on it fail at once. */
  readonly isUnreachable: boolean;
  /** Why it failed last, in words, if it did. */
  readonly cause: string | undefined;
  /** How long a command waits for an unreachable Redis before it fails (ms); undefined when unbounded. */
  readonly waitBound: number | undefined;
  /** Whether Redis sent anything on the connection since `since` (monotonic ms). */
  heardSince(since: number): boolean;
  /** The error a call fails with while the connection is unreachable; `action` says what it was doing. */
  failure(action?: string): RedisConnectionError;
  /**
   * Where the driver can tell when a command was written (ioredis): runs `send`, which issues one
   * command, and stamps its last write; a lease the command took is counted from there (see
   * `RedisReachability.stampWrites`). Absent elsewhere: the lease then counts from the send.
   */
  stampWrites?<T>(send: () => Promise<T>): { readonly reply: Promise<T>; readonly written: CommandWrite };
  /** Each time it becomes unreachable; returns the unsubscribe. */
  onUnreachable(listener: () => void): () => void;
  /** Each time commands can be sent again after it was unusable; returns the unsubscribe. */
  onReachable(listener: () => void): () => void;
}

/** A dedicated pub/sub connection. */
export interface SubscriberConnection {
  /** Connected and not lost since. */
  readonly ready: boolean;
  /** Connects (a first SUBSCRIBE must not be what connects it: Redis refuses the ready check in subscriber mode). */
  connect(): Promise<void>;
  /** Resolves once Redis confirmed the subscription; SSUBSCRIBE on a cluster. */
  subscribe(channel: string): Promise<void>;
  unsubscribe(channel: string): Promise<void>;
  /** Every message of every channel subscribed here. */
  onMessage(listener: (channel: string, message: string) => void): void;
  /**
   * Each time the connection is ready, the first time included. After a reconnect the channels are
   * subscribed again by the transport, and messages published while it was down are gone.
   */
  onReady(listener: () => void): void;
  /** Cuts the connection at once. */
  close(): Promise<void>;
}

/** A dedicated connection parked on blocking pops. It is never trusted across a failure: one lost, it is closed. */
export interface BlockingReader {
  /** BZPOPMIN `key` for up to `timeoutMs`: true when a member was popped, false on timeout. */
  popMin(key: string, timeoutMs: number): Promise<boolean>;
  /** Calls `listener` once when the connection closes (a pop in flight then never answers); returns the unsubscribe. */
  onLost(listener: () => void): () => void;
  /** Cuts the connection at once (a pop in flight is abandoned) and forgets it. */
  close(): Promise<void>;
}
