/**
 * The `dedupe` option of `schedule()`: at most one job per `key` per `ttl` (throttle), or one job
 * `ttl` ms after the last of a burst of calls, with its payload (debounce), across every instance.
 *
 * @example
 * // one reindex per product per minute, whatever the number of edits meanwhile
 * await delayQueue.schedule('product.reindex', { productId }, { dedupe: { key: `product:${productId}`, ttl: 60_000 } });
 * // one notification 5 s after the last message of a conversation, with the last message
 * await delayQueue.schedule('chat.notify', message, { dedupe: { key: `chat:${chatId}`, ttl: 5_000, mode: 'debounce' } });
 */
export interface DedupeOptions {
  /**
   * The de-duplication key, scoped to the topic. At most 256 UTF-8 bytes; no quotes, backslashes
   * or control characters (as a group name).
   */
  key: string;
  /** Milliseconds: a whole number from 1 to 30 days (2_592_000_000). */
  ttl: number;
  /**
   * - `'throttle'` (default): the first call creates the job and holds the key for `ttl` ms (counted from
   *   that call, on the Redis clock), even after the job ran; every call meanwhile creates nothing and
   *   answers `'existing'` with that job's id;
   * - `'debounce'`: each call restarts the wait and replaces the payload; the job runs once, `ttl` ms after
   *   the last call (a call while it runs starts a new period). See docs/delayed-jobs.md, "Throttle and debounce".
   */
  mode?: 'throttle' | 'debounce';
}
