import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../core/options/redis-lock-config.js';
import type { RedisScript } from '../../core/redis/redis-script.js';

/**
 * Operation records make a script call safe to run twice. ioredis re-sends a command whose reply
 * was lost when it reconnects, and the after-commit writer retries a write whose outcome it does not
 * know; either way the script runs again with the same arguments. A call that passes a record key
 * (KEYS[6]) stores what it did there (a short-lived key in the topic's hash tag, so in the same
 * cluster slot); a second run finds it, answers the same and changes nothing. Once the caller has
 * the reply no re-send can follow, so it deletes the record (a claim: with its next claim); a record
 * whose reply never came expires (OPERATION_RECORD_TTL_MS, or the visibility timeout for a claim).
 */

/** A fresh id for one operation (12 URL-safe characters). */
export function newOperationId(): string {
  return randomBytes(9).toString('base64url');
}

/** The record key of operation `id` on the topic (shard) whose jobs hash is `jobsKey`. */
export function operationKey(jobsKey: string, id: string): string {
  return `${jobsKey.slice(0, -':jobs'.length)}:op:${id}`;
}

/**
 * Runs `script` with a fresh operation record after the topic keys (`keys[1]` is the jobs hash), so
 * a re-sent run answers as the first; deletes the record once the reply is in.
 */
export async function runRecorded<T>(client: RedisClient, script: RedisScript, keys: string[], args: (string | number)[]): Promise<T> {
  const record = operationKey(keys[1], newOperationId());
  const reply = await script.run<T>(client, [...keys, record], args);
  // A record that cannot be deleted now expires on its own.
  await client.del(record).catch(() => undefined);
  return reply;
}
