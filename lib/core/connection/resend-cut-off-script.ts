import { RedisConnectionError } from '../errors/redis-connection.error.js';
import type { ModuleTransport } from '../redis/redis-transport.js';

/** How often a script cut off by a dropped connection looks whether the connection is back. */
const READY_POLL_MS = 25;

/**
 * What ioredis does by itself, for the drivers that do not (node-redis, GLIDE): a script whose
 * connection dropped before its reply came is sent once more when the connection is back, so the
 * caller gets Redis's answer rather than an error for a blip. Every script of the library is safe
 * to run twice (the lost-reply suite runs each one twice on every driver), so a script that did
 * run the first time gives the same answer again. Only a `RedisConnectionError` is retried, once,
 * and only if the connection is ready again by `until` (monotonic ms: the call's start plus
 * `unreachableTimeout`): a Redis that stays away still fails the call within the operations
 * contract's bound, counted from the call, not from its first failure.
 */
export async function resendCutOffScript<T>(
  transport: Pick<ModuleTransport, 'ready' | 'ended'>,
  error: unknown,
  until: number,
  again: () => Promise<T>,
): Promise<T> {
  if (!(error instanceof RedisConnectionError) || transport.ended) throw error;
  while (!transport.ready) {
    if (transport.ended || performance.now() >= until) throw error;
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
  return again();
}
