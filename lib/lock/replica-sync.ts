import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { LockNotReplicatedError } from '../errors/lock-not-replicated.error.js';
import type { RedisClient } from '../options/redis-lock-config.js';
import type { SyncReplicasOptions } from '../options/redis-lock-module-options.interface.js';

/**
 * Waits (Redis `WAIT numreplicas timeout`) until `sync.replicas` replicas have confirmed every write
 * made so far on the connection that carried the acquire of `slotKey`, so that a failover promoting
 * one of them keeps the lock. When fewer confirm in time, `undo()` releases the lock and the acquire
 * fails with `LockNotReplicatedError`.
 *
 * WAIT counts the writes *of the connection it runs on*, so it has to go to the very connection that
 * ran the acquire script: the client itself on a single Redis or Sentinel, the slot's master
 * connection on a cluster. WAIT blocks that connection (other commands queue behind it) until the
 * replicas answer, which takes one round trip when they are healthy and `timeout` when they are not.
 */
export async function awaitReplicas(
  client: RedisClient,
  slotKey: string,
  sync: SyncReplicasOptions,
  reportedKey: string | readonly string[],
  undo: () => Promise<unknown>,
): Promise<void> {
  let acknowledged = 0;
  let failure: unknown;
  try {
    const connection = connectionOf(client, slotKey);
    // Taken in the same tick as the acquire's reply, so this is the socket that carried the acquire.
    const socket = connection.stream;
    const replied = Number(await connection.call('WAIT', sync.replicas, sync.timeout));
    // A WAIT cut off by a lost connection is sent again after the reconnect (ioredis resends
    // unanswered commands), possibly to a newly promoted primary, where it counts the writes of a
    // fresh connection, i.e. none, and succeeds at once. Such an answer says nothing about the lock.
    if (connection.stream !== socket) throw new Error('the connection was re-established while waiting for replicas');
    acknowledged = replied;
  } catch (error) {
    failure = error;
  }
  if (failure === undefined && acknowledged >= sync.replicas) return;
  // Best effort: if Redis is out of reach the lease ends the hold anyway.
  await undo().catch(() => undefined);
  throw new LockNotReplicatedError(reportedKey, sync.replicas, acknowledged, sync.timeout, failure === undefined ? undefined : { cause: failure });
}

/**
 * The connection that runs commands on `key`: a plain client is one connection; on a cluster it is
 * the master of the key's slot per ioredis's slot map (`cluster.slots[slot][0]` is its `host:port`).
 */
export function connectionOf(client: RedisClient, key: string): Redis {
  if (!(client instanceof Cluster)) return client;
  const nodeKey = client.slots[calculateSlot(key)]?.[0];
  const node = nodeKey === undefined ? undefined : client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === nodeKey);
  if (!node) throw new Error(`no known master for the slot of ${JSON.stringify(key)} (cluster slot map not loaded or changing)`);
  return node;
}

/**
 * Validates a `syncReplicas` option. `timeout` must be below half the lease: WAIT runs after the lock
 * is taken, and a caller should get the lock with most of its lease still ahead.
 */
export function resolveSyncReplicas(option: string, value: unknown, leaseTime: number): SyncReplicasOptions | undefined {
  if (value === undefined || value === false) return undefined;
  const v = value as Partial<SyncReplicasOptions> | null;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new InvalidOptionsError(option, 'expected { replicas: number; timeout: number } (or false to turn it off)');
  }
  const { replicas, timeout } = v;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 1 || replicas > 1000) {
    throw new InvalidOptionsError(`${option}.replicas`, `got ${String(replicas)}; use a whole number of replicas from 1 to 1000`);
  }
  const maxTimeout = Math.floor(leaseTime / 2) - 1;
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1 || timeout > maxTimeout) {
    throw new InvalidOptionsError(
      `${option}.timeout`,
      `got ${String(timeout)}; use whole milliseconds from 1 to ${maxTimeout} (below half the lease of ${leaseTime} ms; ` +
        '0 would make WAIT block forever)',
    );
  }
  return { replicas, timeout };
}
