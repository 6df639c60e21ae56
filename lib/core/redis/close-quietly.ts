import { isIoredisCluster } from './ioredis-flavour.js';
import type { RedisClient } from '../options/redis-lock-config.js';
import { RedisReachability } from './reachability.js';
import { awaitingReplies, endClient } from './ioredis-internals.js';

/** How long a QUIT may wait for its answer before the socket is cut. */
export const QUIT_TIMEOUT_MS = 1_000;

/**
 * Commands waiting this long on the socket with nothing at all heard from Redis: it is not
 * answering (a paused or black-holed server), so a QUIT queued behind them would not be either.
 */
const HUNG_AFTER_MS = 500;

interface CloseOptions {
  /**
   * Send QUIT first, so that the replies of commands already sent are read before the socket
   * closes (default true). A connection that carries no writes (a subscriber, a blocking reader) has
   * nothing to wait for: it is cut at once.
   */
  readonly quit?: boolean;
  /** Monotonic ms (performance.now()) by which the connection is closed whatever Redis does; default 1 s from now. */
  readonly deadline?: number;
}

/**
 * Closes a connection without throwing: QUIT when it is ready, commands on it await replies and
 * Redis is answering (bounded by `deadline`, so a hung server cannot hold shutdown), a plain
 * disconnect otherwise.
 */
export function closeQuietly(client: RedisClient): Promise<void> {
  return closeConnection(client, {});
}

/** `closeQuietly` with its options: cut at once, or QUIT by a given deadline. */
export async function closeConnection(client: RedisClient, options: CloseOptions): Promise<void> {
  if (client.status === 'end') return;
  const deadline = options.deadline ?? performance.now() + QUIT_TIMEOUT_MS;
  if (
    client.status !== 'ready' ||
    options.quit === false ||
    !awaitsReplies(client) ||
    !answering(client) ||
    deadline <= performance.now()
  ) {
    cut(client);
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    const quit = client.quit();
    quit.catch(() => undefined);
    await Promise.race([quit, new Promise((resolve) => (timer = setTimeout(resolve, Math.ceil(deadline - performance.now()))))]);
  } catch {
    // Already closing or closed: nothing to do.
  } finally {
    clearTimeout(timer);
    // After a QUIT that was answered the connection has ended: disconnecting it again would leave
    // ioredis' 2 s "still open" timer running on a socket that is already closed, holding the
    // process open after the application's close(). (The status changed while QUIT ran: read anew.)
    if (statusOf(client) !== 'end') cut(client);
  }
}

/**
 * Disconnects, and ends a client that was waiting to reconnect: it has no socket whose close would
 * take it to 'end', so ioredis' disconnect() only cancels the reconnect and leaves it
 * 'reconnecting' for good, with the commands of its offline queue, and every command sent later,
 * waiting forever. Ended the way ioredis' own close handler ends a client: status 'end', queues
 * failed with its "Connection is closed." (a call of ours turns that into RedisConnectionError).
 */
function cut(client: RedisClient): void {
  client.disconnect();
  if (isIoredisCluster(client) || statusOf(client) !== 'reconnecting') return;
  endClient(client);
}

/**
 * Whether commands sent on this connection still await their replies: QUIT only serves to read
 * those. With none, a disconnect ends the socket just as cleanly (what was written is still sent
 * before the FIN) and cannot be held by a server that stopped answering. A cluster keeps no such
 * count here: it is assumed to.
 */
function awaitsReplies(client: RedisClient): boolean {
  const waiting = isIoredisCluster(client) ? undefined : awaitingReplies(client);
  return waiting === undefined || waiting > 0;
}

/**
 * False when Redis is known not to answer this connection: its watcher counts it unreachable or
 * down, or commands have waited on it for `HUNG_AFTER_MS` without a byte from Redis.
 */
function answering(client: RedisClient): boolean {
  const watcher = RedisReachability.of(client);
  if (!watcher) return true;
  if (watcher.isUnreachable || watcher.isDown) return false;
  return !watcher.hungFor(HUNG_AFTER_MS);
}

function statusOf(client: RedisClient): string {
  return client.status;
}
