import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import type { JobOutboxStore } from '../outbox-port/job-outbox-store.js';
import type { TransactionSynchronizer } from '../transaction/transaction-synchronizer.interface.js';

/**
 * How to reach Redis: a URL, a driver's connection options, cluster nodes, or a client you already own.
 *
 * Four drivers: `ioredis` (the default), `iovalkey`, `node-redis` (the `redis` package) and
 * `valkey-glide` (`@valkey/valkey-glide`); each is an optional peer your application installs. Name one
 * with `driver`, or pass a client of any of them as `{ client }`: the driver is detected, the module
 * opens its own extra connections from it (pub/sub, blocking reads) and never closes yours. GLIDE
 * clients cannot be copied: give `{ client, url }` or `{ client, addresses }` for those extra connections.
 *
 * RESP2 and RESP3 both work (`protocol: 2` or `3`, either `replyMapping`); `stringNumbers: true` and a
 * client `keyPrefix` (use the module's `keyPrefix`) are refused at bootstrap (`InvalidOptionsError`).
 * A connection built from a URL or from options reconnects after a drop in 25 ms, doubling up to 1 s,
 * plus up to 25 % jitter, unless the options set a `retryStrategy`; a client you pass in keeps its own.
 * See docs/redis-protocols.md and docs/compatibility.md (drivers).
 *
 * @inline
 */
export type RedisConnectionOptions =
  | string
  | (RedisOptions & {
      /** `ioredis` (default) or `iovalkey`: both take ioredis' options. */
      driver?: 'ioredis' | 'iovalkey';
      /** A `redis://` or `rediss://` URL; the other options complete it. */
      url?: string;
    })
  | {
      /** The seed nodes of a Redis Cluster. */
      cluster: ClusterNode[];
      /** ioredis (or iovalkey) `Cluster` options. */
      options?: ClusterOptions;
      /** `ioredis` (default) or `iovalkey`. */
      driver?: 'ioredis' | 'iovalkey';
    }
  | {
      /**
       * A client or cluster you own, of any supported driver (an ioredis or iovalkey `Redis` or `Cluster`,
       * a node-redis client or cluster, a GLIDE client or cluster client): the module uses it and never closes it.
       */
      client: Redis | Cluster | object;
      /** GLIDE only: where the module's own extra connections go (GLIDE clients have no `duplicate()`). */
      url?: string;
      /** GLIDE only, instead of `url`: the addresses of the server (or the cluster's seed nodes). */
      addresses?: Array<{
        /** Host name or IP address. */
        host: string;
        /** Port; default 6379. */
        port?: number;
      }>;
    }
  | {
      /** node-redis: the `redis` package's `createClient` (or `createCluster`, given `rootNodes`). */
      driver: 'node-redis';
      /** A `redis://` or `rediss://` URL. */
      url?: string;
      /** A cluster's seed nodes (node-redis `createCluster`), each `{ url }`; the other options are the cluster's. */
      rootNodes?: Array<{
        /** The node's `redis://` URL. */
        url?: string;
        /** Any other node-redis client option of that node. */
        [option: string]: unknown;
      }>;
      /** Any other node-redis `createClient` (or `createCluster`) option, passed on unchanged. */
      [option: string]: unknown;
    }
  | {
      /** Valkey GLIDE: the `@valkey/valkey-glide` package's `GlideClient` (or `GlideClusterClient`). */
      driver: 'valkey-glide';
      /** A `redis://` or `rediss://` URL (host, port, user, password, database, TLS). */
      url?: string;
      /** Instead of `url`: the server's address, or a cluster's seed nodes. */
      addresses?: Array<{
        /** Host name or IP address. */
        host: string;
        /** Port; default 6379. */
        port?: number;
      }>;
      /** A Redis Cluster (GLIDE's `GlideClusterClient`). Default false. */
      clusterMode?: boolean;
      /** Any other GLIDE client configuration option, passed on unchanged. */
      [option: string]: unknown;
    };

/**
 * Defaults for every lock taken through `LockService` and `@WithLock`.
 */
export interface LockDefaults {
  /** Lease in ms. Without an explicit lease the watchdog renews it every lease/3. Default 30000. */
  leaseTime?: number;
  /** How long `acquire` waits for a held lock before `LockAcquireTimeoutError`, in ms. Default 10000. */
  waitTimeout?: number;
  /** Renew locks taken without an explicit `leaseTime`. Default true. */
  watchdog?: boolean;
  /** Hand the lock over in FIFO order by default. Default false. */
  fair?: boolean;
  /**
   * Wait for replicas to confirm every acquire (Redis `WAIT`) before handing out the lock, so that a
   * failover right after cannot give it to a second owner. Default: off (`false` or left out).
   * See `SyncReplicasOptions`.
   */
  syncReplicas?: SyncReplicasOptions | false;
}

/**
 * Replica acknowledgement of acquires (Sentinel or Cluster with replicas). After the acquire script
 * succeeds, the library sends `WAIT replicas timeout` on the connection that ran it; if fewer replicas
 * confirm in time, the lock is released and the acquire fails with `LockNotReplicatedError`.
 *
 * Costs one round trip to the replicas per acquire, and while WAIT runs the command connection (the
 * slot's master connection on a cluster) carries nothing else. Redis replication stays asynchronous:
 * this narrows the window in which a failover loses a fresh lock, it does not make Redis a consensus
 * store (a replica that confirmed may still not be the one promoted).
 *
 * @example
 * RedisLockModule.forRoot({ redis: { sentinels, name: 'mymaster' }, lock: { syncReplicas: { replicas: 1, timeout: 200 } } })
 */
export interface SyncReplicasOptions {
  /** How many replicas must confirm (`WAIT numreplicas`). A whole number >= 1. */
  replicas: number;
  /** How long to wait for them, in ms (>= 1, below half the lease). */
  timeout: number;
}

/** Exponential backoff between delivery attempts of a failed job. */
export interface BackoffOptions {
  /** First delay in ms. Default 1000. */
  delay?: number;
  /** Multiplier per attempt. Default 2. */
  factor?: number;
  /** Upper bound of one delay in ms. Default 3600000. */
  maxDelay?: number;
  /** Random share (0..1) of each delay, so retries of many jobs do not align. Default 0.2. */
  jitter?: number;
}

/**
 * What is kept after a job ends.
 */
export interface RetentionOptions {
  /** Dead letters kept per topic at most (oldest dropped first). Default 10000. */
  deadLetterMaxCount?: number;
  /** Dead letters older than this many ms are dropped. Default 7 days. */
  deadLetterMaxAge?: number;
}

/**
 * Defaults for delayed-job consumers and producers.
 */
export interface DelayQueueDefaults {
  /** Handlers run at once per consumer. Default 1. */
  concurrency?: number;
  /** A claimed job returns to the queue if not acked or extended within this many ms. Default 30000. */
  visibilityTimeout?: number;
  /** Deliveries before a job goes to the dead-letter set. Default 5. */
  maxAttempts?: number;
  /** Backoff between the attempts of a failed job (see `BackoffOptions`). */
  backoff?: BackoffOptions;
  /** How long shutdown waits for running handlers, in ms. Default 10000. */
  shutdownTimeout?: number;
  /** What is kept after a job ends (see `RetentionOptions`). */
  retention?: RetentionOptions;
  /**
   * Largest payload a job may have, as UTF-8 bytes of its JSON: 1024 to 536870912 (Redis's own
   * limit of a value). **Default 524288 (512 KiB).** `schedule`, `scheduleMany` and `repeat` refuse
   * a larger payload with `InvalidJobError` naming its size, before anything is written (a job
   * scheduled inside a transaction, outbox row included, is checked at the call). Every job body is
   * read whole by claims, `get` and the dashboard, and held in Redis's memory: keep large data
   * elsewhere (object storage, your database) and pass a reference; raise the limit only if you must.
   */
  maxPayloadBytes?: number;
  /**
   * Settings of individual topics, by topic name. A hot topic can be split into `shards` (2-256):
   * each shard has its own hash tag (`topic#0`, `topic#1`, …), so on a Redis Cluster the shards
   * spread over the masters and a burst is scheduled and claimed on several masters at once.
   *
   * The API does not change: `schedule`/`get`/`cancel`/`reschedule` find a job's shard from its id
   * (a hash), consumers drain every shard (each shard has its own claim loop and an equal share of
   * the consumer's `concurrency`, at least one handler per shard), and `stats`, `deadLetters` and
   * `retryDead` add the shards up. Jobs due in the same millisecond keep their order only within
   * a shard. Every producer and consumer must use the same shard count; changing it moves where
   * ids are looked up, so drain the topic first.
   *
   * @example
   * RedisLockModule.forRoot({ redis: { cluster: nodes }, delayQueue: { topics: { 'order.expire': { shards: 6 } } } })
   */
  topics?: Record<string, DelayQueueTopicOptions>;
  /**
   * Transactional outbox for jobs scheduled inside a database transaction: `schedule()` and
   * `scheduleMany()` called while the `transactions` port reports an active transaction insert
   * outbox rows in that transaction instead of writing to Redis after the
   * commit. The row commits or rolls back with the caller's data; after COMMIT this process writes
   * the job to Redis at once, and a relay in every instance writes rows left behind by a crash or a
   * Redis outage. Without it, jobs of committed transactions are written from memory after COMMIT
   * (lost if the process dies in between). See docs/outbox.md.
   *
   * @example
   * import { PostgresJobOutbox, inPgTransaction } from 'nestjs-redis-lock/outbox/postgres';
   * RedisLockModule.forRoot({
   *   delayQueue: { outbox: new PostgresJobOutbox({ transaction: inPgTransaction(currentClient), relay: pool }) },
   * });
   */
  outbox?: JobOutboxStore;
  /** How the outbox relay looks for rows left behind (only with `outbox`). */
  outboxRelay?: OutboxRelayOptions;
}

/**
 * Settings of the outbox relay (see `DelayQueueDefaults.outbox`).
 */
export interface OutboxRelayOptions {
  /**
   * Longest time between two looks for rows left behind, in ms. Default 1000. A store that can
   * listen (PostgreSQL LISTEN/NOTIFY) also wakes the relay when rows are committed.
   */
  pollInterval?: number;
  /** Rows claimed per look. Default 500. */
  batchSize?: number;
  /**
   * Rows younger than this (ms) are left to the process that committed them, which relays them at
   * once. Default 2000. Taking them earlier is still correct (the job id and the relay's operation
   * record make a second write a no-op), only wasteful.
   */
  minAge?: number;
  /**
   * How long a relay's claim of rows lasts, in ms (at least 1000; default 60000): rows claimed by a
   * process that died (right after COMMIT, or in the middle of a relay) are taken over by another
   * instance this long after the claim. Keep it above the longest a write to Redis may hang while
   * ioredis retries (about 20 s with the module's defaults): a shorter lease only lets a second relay
   * write the same rows too, which their operation records make harmless.
   */
  claimLease?: number;
}

/**
 * Per-topic settings (see `DelayQueueDefaults.topics`).
 */
export interface DelayQueueTopicOptions {
  /** Shards the topic is split into. Default 1 (not split). */
  shards?: number;
}

/** Options of `RedisLockModule.forRoot()` / `forRootAsync()`. */
export interface RedisLockModuleOptions {
  /**
   * Connection; default `redis://127.0.0.1:6379`. In Redlock mode it carries the delayed jobs only
   * (locks go to `redlock.clients`) and defaults to the first Redlock master.
   */
  redis?: RedisConnectionOptions;
  /**
   * Redlock (quorum) mode: exclusive locks are taken on a majority of independent Redis masters,
   * so losing a minority of them (crash, partition) neither blocks locking nor hands a lock to two
   * owners. See `RedlockOptions`.
   */
  redlock?: RedlockOptions;
  /** Prefix of every key this module writes. Default `'rl'`. */
  keyPrefix?: string;
  /** Defaults of every lock taken through `LockService` and `@WithLock`. */
  lock?: LockDefaults;
  /** Defaults of delayed-job consumers and producers, and per-topic settings. */
  delayQueue?: DelayQueueDefaults;
  /** Transaction port; default: the built-in AsyncLocalStorage unit of work (`runInTransaction`). */
  transactions?: TransactionSynchronizer;
  /**
   * How long bootstrap waits for Redis to answer before failing with `RedisConnectionError`, in ms.
   * Default 10000. Set 0 to not check at bootstrap.
   */
  connectTimeout?: number;
  /**
   * How long a call waits for a Redis it cannot reach, in ms, before failing with
   * `RedisConnectionError` naming the cause (refused, unknown host, authentication, no answer).
   * Default 2000. Applies to the connections the module builds from a URL or ioredis options (not
   * a cluster, nor Sentinel, where a failover is ridden out instead):
   * commands wait for a lost connection to come back at most this long after it was lost, and
   * commands an open connection leaves unanswered this long (a hung server) fail too; later calls
   * then fail at once until Redis answers again. ioredis' `connectTimeout` defaults to half of it.
   * Outages shorter than this are ridden out (commands are sent, or re-sent, once the
   * connection is back). Your own `socketTimeout`, `connectTimeout`, `maxRetriesPerRequest` or
   * `enableOfflineQueue` in the `redis` options are kept; `false` leaves it all to ioredis (its
   * retry budget, `maxRetriesPerRequest`, then decides). A client passed in with `{ client }`
   * keeps its own settings (its errors still name their cause).
   */
  unreachableTimeout?: number | false;
  /**
   * What bootstrap does when Redis may evict keys (`maxmemory-policy` other than `noeviction`;
   * `volatile-*` policies too, since lock keys have a TTL): an evicted lock key lets a second owner
   * in, an evicted fencing counter could let a token repeat. The policy is read with
   * `CONFIG GET maxmemory-policy`, or from `INFO memory` where CONFIG is renamed or forbidden, on the
   * module's connection (every master of a cluster) and on every Redlock master; if neither can be
   * read, a warning is logged. With `connectTimeout: 0` the check runs when the connection is ready
   * and can only log (an error for 'error').
   * - `'error'` (default): bootstrap fails with `RedisEvictionPolicyError`.
   * - `'warn'`: logs a warning and starts.
   * - `'off'`: no check (e.g. a Redis used only by this module with memory to spare and no maxmemory).
   */
  evictionPolicyCheck?: EvictionPolicyCheck;
  /**
   * OpenTelemetry spans around acquires, locked calls, `schedule` and handler runs, with the trace
   * context carried from `schedule` to the handler inside the job. Active when `@opentelemetry/api`
   * is installed (an optional peer dependency); without it nothing is loaded. Default true.
   */
  tracing?: boolean;
}

/**
 * See `RedisLockModuleOptions.evictionPolicyCheck`.
 *
 * @inline
 */
export type EvictionPolicyCheck = 'error' | 'warn' | 'off';

/**
 * One Redlock master: a URL, ioredis options, or a standalone ioredis client you own (never closed by
 * the module). A master built from a URL or options reconnects like the `redis` connection (25 ms
 * doubling up to 1 s, unless the options set a `retryStrategy`), so a reply re-sent after a blip still
 * lands within `requestTimeout`; give a client you pass in a similar strategy. See docs/redis-protocols.md.
 *
 * @inline
 */
export type RedlockClientOptions = string | RedisOptions | Redis;

/**
 * Redlock mode: `LockService.acquire` / `tryAcquire` / `using`, multi-key locks and `@WithLock`
 * take each lock on every master at once and hold it when a majority granted it in less time
 * than the lease minus a clock-drift allowance. Fencing tokens stay strictly increasing while a
 * minority of masters is down. Fair, read/write and semaphore locks, and `syncReplicas`, are not
 * available in this mode (`UnsupportedInRedlockModeError`).
 *
 * The masters must be independent (not replicas of one another, not one cluster); use an odd
 * number, 3 or 5, and run them with AOF (`appendfsync always`) or restart a crashed one only after
 * the longest lease has passed, or it may forget a lock it granted.
 *
 * @example
 * RedisLockModule.forRoot({
 *   redlock: { clients: ['redis://redis-a:6379', 'redis://redis-b:6379', 'redis://redis-c:6379'] },
 * })
 */
export interface RedlockOptions {
  /** The masters, at least one (three or five recommended). */
  clients: RedlockClientOptions[];
  /** Share of the lease kept back for clock drift between the masters (plus 2 ms). Default 0.01. */
  driftFactor?: number;
  /**
   * Longest wait for the masters' answers to one try, renewal or release, in ms: a master that
   * does not answer in time (down, partitioned) counts as a no. Default 500 (at most the lease).
   */
  requestTimeout?: number;
  /**
   * Upper bound of the random pause, in ms, before trying again after a split vote (the lock went
   * to nobody because contenders each won some masters), so they do not collide again. Default 50.
   */
  retryJitter?: number;
  /**
   * How long to wait before trying again when too few masters answered to tell when the lock will
   * be free (they cannot announce a release either), in ms. Default 250.
   */
  retryDelay?: number;
}
