/**
 * The parts of node-redis (`redis` 6) this folder uses, as structural types: the package is an
 * optional peer, so lib/ never imports its values, and its generic client types (modules,
 * functions, scripts, RESP version, type mapping) would leak into every signature here.
 */

/** Per-command options of `sendCommand` (node-redis `CommandOptions`). */
export interface NodeRedisCommandOptions {
  readonly abortSignal?: AbortSignal;
  /** ms a command may wait in the queue before it is written (node-redis 6: 5000 by default; none once written). */
  readonly timeout?: number;
  readonly typeMapping?: Record<number, unknown>;
}

/** A listener of `subscribe` / `sSubscribe`: the message, then its channel. */
export type NodeRedisPubSubListener = (message: string, channel: string) => void;

interface NodeRedisEmitter {
  on(event: string, listener: (...args: never[]) => void): unknown;
  once(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
}

/** Socket options node-redis reads under `socket` (host/port/TLS and the rest pass through). */
export interface NodeRedisSocketOptions {
  readonly host?: string;
  readonly port?: number;
  readonly path?: string;
  readonly connectTimeout?: number;
  readonly reconnectStrategy?: false | number | ((retries: number, cause: Error) => false | Error | number);
  readonly [option: string]: unknown;
}

/** `createClient` options (those read here; the rest pass through). */
export interface NodeRedisClientOptions {
  readonly url?: string;
  readonly socket?: NodeRedisSocketOptions;
  readonly RESP?: 2 | 3;
  readonly disableOfflineQueue?: boolean;
  readonly [option: string]: unknown;
}

/** `createCluster` options (those read here; the rest pass through). */
export interface NodeRedisClusterOptions {
  readonly rootNodes: readonly NodeRedisClientOptions[];
  readonly defaults?: Partial<NodeRedisClientOptions>;
  readonly RESP?: 2 | 3;
  readonly minimizeConnections?: boolean;
  readonly [option: string]: unknown;
}

/** A node-redis client (`createClient`), one connection. */
export interface NodeRedisClient extends NodeRedisEmitter {
  readonly options?: NodeRedisClientOptions;
  readonly isOpen: boolean;
  readonly isReady: boolean;
  /** Counts the connections made so far: it changes when the socket was re-established. */
  readonly socketEpoch: number;
  connect(): Promise<unknown>;
  sendCommand<T = unknown>(args: readonly string[], options?: NodeRedisCommandOptions): Promise<T>;
  duplicate(overrides?: Partial<NodeRedisClientOptions>): NodeRedisClient;
  subscribe(channel: string, listener: NodeRedisPubSubListener): Promise<void>;
  unsubscribe(channel: string, listener?: NodeRedisPubSubListener): Promise<void>;
  /** Waits for the replies of the commands sent, then closes. */
  close(): Promise<void>;
  /** Closes at once, rejecting every command not answered. */
  destroy(): void;
}

/** One master of a node-redis cluster, as `cluster.masters` lists it. */
export interface NodeRedisMasterNode {
  readonly host: string;
  readonly port: number;
  readonly client?: NodeRedisClient;
}

/** A node-redis cluster client (`createCluster`). */
export interface NodeRedisCluster extends NodeRedisEmitter {
  readonly _options?: NodeRedisClusterOptions;
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly masters: readonly NodeRedisMasterNode[];
  readonly slots: ReadonlyArray<{ readonly master: NodeRedisMasterNode } | undefined>;
  connect(): Promise<unknown>;
  sendCommand<T = unknown>(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: readonly string[],
    options?: NodeRedisCommandOptions,
  ): Promise<T>;
  duplicate(overrides?: Partial<NodeRedisClusterOptions>): NodeRedisCluster;
  nodeClient(node: NodeRedisMasterNode): Promise<NodeRedisClient>;
  getNodeClientForKey(key: string, isReadonly?: boolean): Promise<NodeRedisClient>;
  sSubscribe(channel: string, listener: NodeRedisPubSubListener): Promise<void>;
  sUnsubscribe(channel: string, listener?: NodeRedisPubSubListener): Promise<void>;
  close(): Promise<void>;
  destroy(): void;
}

/** What `packageRequire('redis')` gives (the two factories used here). */
export interface NodeRedisPackage {
  createClient(options?: NodeRedisClientOptions): NodeRedisClient;
  createCluster(options: NodeRedisClusterOptions): NodeRedisCluster;
}
