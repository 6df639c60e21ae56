import { LockNotReplicatedError } from '../core/errors/lock-not-replicated.error.js';
import type { RedisTransport } from '../core/redis/redis-transport.js';
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
  transport: Pick<RedisTransport, 'waitForReplicas'>,
  slotKey: string,
  sync: SyncReplicasOptions,
  reportedKey: string | readonly string[],
  undo: () => Promise<unknown>,
): Promise<void> {
  let acknowledged = 0;
  let failure: unknown;
  try {
    // Called in the same tick as the acquire's reply: the transport waits on the connection that carried it.
    acknowledged = await transport.waitForReplicas(slotKey, sync.replicas, sync.timeout);
  } catch (error) {
    failure = error;
  }
  if (failure === undefined && acknowledged >= sync.replicas) return;
  // Best effort: if Redis is out of reach the lease ends the hold anyway.
  await undo().catch(() => undefined);
  const cause = failure === undefined ? undefined : { cause: failure };
  throw new LockNotReplicatedError(reportedKey, sync.replicas, acknowledged, sync.timeout, cause);
}
