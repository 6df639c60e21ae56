import { randomBytes } from 'node:crypto';

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
