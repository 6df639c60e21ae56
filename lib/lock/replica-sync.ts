import calculateSlot from 'cluster-key-slot';
import { Cluster, type Redis } from 'ioredis';
import { LockNotReplicatedError } from '../core/errors/lock-not-replicated.error.js';
import type { RedisClient } from '../core/options/redis-lock-config.js';
import type { SyncReplicasOptions } from '../core/options/redis-lock-module-options.interface.js';

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
function connectionOf(client: RedisClient, key: string): Redis {
  if (!(client instanceof Cluster)) return client;
  const nodeKey = client.slots[calculateSlot(key)]?.[0];
  const node = nodeKey === undefined ? undefined : client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === nodeKey);
  if (!node) throw new Error(`no known master for the slot of ${JSON.stringify(key)} (cluster slot map not loaded or changing)`);
  return node;
}
