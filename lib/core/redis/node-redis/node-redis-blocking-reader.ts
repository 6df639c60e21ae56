import type { BlockingReader } from '../redis-transport.js';
import { RESP2_COMMAND_OPTIONS } from './node-redis-replies.js';
import type { NodeRedisClient, NodeRedisCluster, NodeRedisCommandOptions } from './node-redis-types.js';

/** The dedicated connection: a copy of the command client, or a cluster copy that routes BZPOPMIN by its key. */
export type BlockingTarget =
  { readonly kind: 'client'; readonly client: NodeRedisClient } | { readonly kind: 'cluster'; readonly cluster: NodeRedisCluster };

/**
 * No request timeout on a pop, whatever `commandOptions.timeout` the user's client sets (the copy
 * inherits it): a BZPOPMIN legitimately keeps the connection silent for its whole block time.
 */
const POP_OPTIONS: NodeRedisCommandOptions = { ...RESP2_COMMAND_OPTIONS, timeout: undefined };

/** The events that say a copy lost its connection: it never reconnects (see the transport), so each is final. */
const CLIENT_LOST = ['error', 'end'] as const;
const CLUSTER_LOST = ['error', 'node-error', 'node-disconnect', 'disconnect'] as const;

/**
 * A dedicated node-redis connection for BZPOPMIN. It is built not to reconnect: a pop in flight is
 * rejected by node-redis when the socket drops, and the owner replaces the connection on `onLost`
 * (see `MarkerWaiter`). Connects on the first pop.
 */
export class NodeRedisBlockingReader implements BlockingReader {
  private connecting: Promise<unknown> | undefined;

  constructor(
    private readonly target: BlockingTarget,
    private readonly closeTarget: () => Promise<void>,
  ) {}

  async popMin(key: string, timeoutMs: number): Promise<boolean> {
    const args = ['BZPOPMIN', key, String(timeoutMs / 1000)];
    if (this.target.kind === 'cluster') {
      const cluster = this.target.cluster;
      await (this.connecting ??= cluster.connect());
      return Boolean(await cluster.sendCommand(key, false, args, POP_OPTIONS));
    }
    const client = this.target.client;
    await (this.connecting ??= client.connect());
    return Boolean(await client.sendCommand(args, POP_OPTIONS));
  }

  onLost(listener: () => void): () => void {
    const events = this.target.kind === 'cluster' ? CLUSTER_LOST : CLIENT_LOST;
    const emitter = this.target.kind === 'cluster' ? this.target.cluster : this.target.client;
    let called = false;
    const once = (): void => {
      if (called) return;
      called = true;
      unsubscribe();
      listener();
    };
    const unsubscribe = (): void => {
      for (const event of events) emitter.off(event, once);
    };
    for (const event of events) emitter.on(event, once);
    return unsubscribe;
  }

  /** Cut at once (node-redis' `destroy()`): a pop in flight is rejected, nothing else is unwritten. */
  close(): Promise<void> {
    return this.closeTarget();
  }
}
