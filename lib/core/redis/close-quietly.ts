import type { RedisClient } from '../options/redis-lock-config.js';

/**
 * Closes a connection without throwing: QUIT when it is ready (bounded to 1 s, so a black-holed
 * server cannot hang shutdown), a plain disconnect otherwise.
 */
export async function closeQuietly(client: RedisClient): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([client.quit(), new Promise((resolve) => (timer = setTimeout(resolve, 1_000)))]);
  } catch {
    // Already closing or closed: nothing to do.
  } finally {
    clearTimeout(timer);
    // After a QUIT that was answered the connection has ended: disconnecting it again would leave
    // ioredis' 2 s "still open" timer running on a socket that is already closed, holding the
    // process open after the application's close(). (The status changed while QUIT ran: read anew.)
    if (statusOf(client) !== 'end') client.disconnect();
  }
}

function statusOf(client: RedisClient): string {
  return client.status;
}
