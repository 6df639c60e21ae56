import { RedisConnectionError } from '../../errors/redis-connection.error.js';
import { toRedisLockError } from '../redis-errors.js';
import type { ScannedKeys, ScratchConnection } from '../redis-transport.js';
import { asReplyError, resp2Shape, RESP2_COMMAND_OPTIONS } from './node-redis-replies.js';
import { firstKeyOf } from './node-redis-routing.js';
import { scanServers } from '../scan-keys.js';
import { destroyNodeRedis } from './destroy-node-redis.js';
import type { NodeRedisClient, NodeRedisCluster } from './node-redis-types.js';

/** How long one command of a scratch connection waits for its answer (connecting included). */
const SCRATCH_COMMAND_TIMEOUT_MS = 3_000;

/** A new connection of its own, built not to reconnect (a copy with `reconnectStrategy: false`). */
export type ScratchTarget =
  { readonly kind: 'client'; readonly client: NodeRedisClient } | { readonly kind: 'cluster'; readonly cluster: NodeRedisCluster };

/**
 * A short-lived node-redis connection for maintenance work (see `ModuleTransport.openScratch`):
 * connects at once, never reconnects, and fails a command that got no answer within
 * `SCRATCH_COMMAND_TIMEOUT_MS` rather than waiting for a server that is gone.
 */
export class NodeRedisScratch implements ScratchConnection {
  private readonly connected: Promise<unknown>;

  constructor(
    private readonly target: ScratchTarget,
    private readonly endpoint: string,
  ) {
    this.connected = target.kind === 'cluster' ? target.cluster.connect() : target.client.connect();
    this.connected.catch(() => undefined);
  }

  command<T = unknown>(name: string, ...args: Array<string | number>): Promise<T> {
    const strings = args.map(String);
    return this.bounded(`run ${name.toUpperCase()}`, async () => {
      await this.connected;
      const full = [name, ...strings];
      const reply =
        this.target.kind === 'cluster'
          ? await this.target.cluster.sendCommand(firstKeyOf(name, strings), false, full, RESP2_COMMAND_OPTIONS)
          : await this.target.client.sendCommand(full, RESP2_COMMAND_OPTIONS);
      return resp2Shape(name, reply) as T;
    });
  }

  scanKeys(pattern: string, maxKeys: number, maxCalls?: number): Promise<ScannedKeys> {
    return this.bounded('scan keys', async () => {
      await this.connected;
      const target = this.target;
      if (target.kind === 'client')
        return scanServers([(args) => target.client.sendCommand(args, RESP2_COMMAND_OPTIONS)], pattern, maxKeys, maxCalls);
      const servers = target.cluster.masters.map(
        (master) => async (args: readonly string[]) => (await target.cluster.nodeClient(master)).sendCommand(args, RESP2_COMMAND_OPTIONS),
      );
      return scanServers(servers, pattern, maxKeys, maxCalls);
    });
  }

  close(): Promise<void> {
    destroyNodeRedis(this.target.kind === 'cluster' ? this.target.cluster : this.target.client);
    return Promise.resolve();
  }

  private async bounded<T>(action: string, run: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new RedisConnectionError(
              `Redis at ${this.endpoint} did not answer within ${SCRATCH_COMMAND_TIMEOUT_MS} ms while trying to ${action}.`,
            ),
          ),
        SCRATCH_COMMAND_TIMEOUT_MS,
      );
    });
    try {
      return await Promise.race([run(), timeout]);
    } catch (error) {
      throw toRedisLockError(asReplyError(error), action);
    } finally {
      clearTimeout(timer);
    }
  }
}
