import type { Registry } from 'prom-client';
import type { LockKeyClassifier } from './key-pattern.js';

/** Options of `RedisLockMetricsModule.forRoot()`. */
export interface RedisLockMetricsOptions {
  /** Where the metrics are registered. Default: prom-client's global `register`. */
  registry?: Registry;
  /** Prepended to every metric name. Default `'redis_lock_'`. */
  prefix?: string;
  /**
   * Maps a lock key to its `key_pattern` label (for locks taken without a template or `keyPattern`).
   * Default `defaultLockKeyPattern`: the key's first segment, ids folded, then `:*` (`account:a` ->
   * `account:*`). Must return few distinct values: it becomes a label.
   */
  keyPattern?: LockKeyClassifier;
  /**
   * Most distinct `key_pattern` values kept; later new patterns are counted under `'other'` (and a
   * warning is logged once), so a classifier that leaks raw keys cannot flood Prometheus. Default 100
   * (1-10000).
   */
  maxKeyPatterns?: number;
  /**
   * Topics whose queue depth (`<prefix>queue_jobs`) is read on every scrape, in addition to the
   * application's own topics (its `@OnDelayed` handlers' and those split into shards in
   * `delayQueue.topics`) and the topics this process has scheduled, consumed or seen an event of
   * since start (up to `maxTopics` in all; these count first). At most `maxTopics` entries.
   */
  topics?: string[];
  /**
   * Most distinct `topic` label values (1-10000), kept in this order: the configured `topics`, the
   * application's own topics (`@OnDelayed` handlers, sharded topics of `delayQueue.topics`), kept at
   * start before any job is seen, then topics in the order this process first sees them. A topic
   * first seen once the set is full gets no label of its own: it is counted under
   * `topic="<other>"` (a warning is logged once; no topic can be named `<other>`) and its queue
   * depths are not read, so topics named from tenant or user input cannot flood Prometheus nor push
   * the application's own topics out, and a scrape runs at most this many `stats` reads against
   * Redis. Default 100.
   */
  maxTopics?: number;
  /** Longest time a scrape waits for the queue depths, in ms. Default 2000. */
  statsTimeout?: number;
  /** Histogram buckets in seconds for lock wait/hold and job lateness/run time. Default: 1 ms to 60 s. */
  buckets?: number[];
}
