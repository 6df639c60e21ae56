/**
 * One soak worker process (started, killed and restarted by tools/soak/soak.ts). It reaches Redis
 * for the library through its own fault proxy, and records every step in the soak's fenced store and
 * history (tools/soak/soak-store.ts) over a direct connection. Concurrently, until told to stop:
 *
 * - OPERATION_LOOPS loops, each drawing lock operations at random (seeded): plain, re-entrant (a
 *   nested acquire inside `using`), fair, extend (fixed lease, `extend()` mid-section), multi-key,
 *   read, write, semaphore. A hold announces itself to each key's fenced row with its token (`enter`),
 *   writes the row's counter + 1 (exclusive holds), and leaves; a semaphore holder counts itself in
 *   and out. When the fence refuses a hold, the worker records whether the library still said the
 *   lock was held (`held-check`);
 * - a producer: schedules a job every 100-300 ms, due in 0-2 s (by delay or by `at`);
 * - a consumer of the same topic, whose handler records every run.
 * The checker (tools/soak/history-checker.ts) judges the history; the worker judges nothing itself.
 *
 * stdout, one line each: `READY`, `STATS <json>` (cumulative, every second and at exit),
 * `VIOLATION <json>` for an unhandled rejection, and `IDLE` once SIGUSR2 (stop producing work, keep
 * consuming) has taken effect: no schedule() or lock operation is under way any more.
 * SIGTERM: stop, shut the application down gracefully, print the last STATS, exit 0.
 *
 * Environment: SOAK_LIB_URL, SOAK_STORE_URL, SOAK_PREFIX, SOAK_WORKER, SOAK_INCARNATION, SOAK_SEED,
 * SOAK_OPERATIONS (comma-separated lock kinds to draw; default all).
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { DelayQueueService, LockService, RedisLockModule, type LockHandle, type RedisConnectionOptions } from '../../lib/index.js';
import type { LockKind } from './history.js';
import {
  EXCLUSIVE_KEYS,
  FAIR_KEYS,
  JOB_VISIBILITY_MS,
  LOCK_LEASE_MS,
  OPERATION_LOOPS,
  OPERATION_WEIGHTS,
  READ_WRITE_KEY,
  SEMAPHORE_KEY,
  SEMAPHORE_LEASE_MS,
  SEMAPHORE_PERMITS,
  SOAK_TOPIC,
  seededRandom,
  type WorkerStats,
} from './soak-constants.js';
import { SoakStore, soakKeys } from './soak-store.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const stats: WorkerStats = {
  operations: 0,
  acquired: 0,
  acquireFailed: 0,
  staleStoppedByFence: 0,
  lockErrors: 0,
  jobsScheduled: 0,
  scheduleErrors: 0,
  handlerRuns: 0,
  handlerErrors: 0,
};

function violation(kind: string, details: Record<string, unknown>): void {
  process.stdout.write(`VIOLATION ${JSON.stringify({ kind, ...details })}\n`);
}

process.on('unhandledRejection', (reason) => {
  violation('unhandled-rejection', { reason: String((reason as Error)?.stack ?? reason) });
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const errorCode = (error: unknown) => String((error as { code?: string })?.code ?? (error as Error)?.name ?? error);

/**
 * Whether the library still considers `lock` held once every due timer has run: a lease that ran
 * out while this process was busy or paused is only noticed when its expiry timer fires, and a
 * timer set now runs after every timer already due.
 */
async function stillHeld(lock: LockHandle): Promise<boolean> {
  await sleep(1);
  return lock.held;
}

async function main(): Promise<void> {
  const prefix = env('SOAK_PREFIX');
  const me = `w${env('SOAK_WORKER')}.${env('SOAK_INCARNATION')}`;
  const random = seededRandom(Number(env('SOAK_SEED')) * 7_919 + Number(env('SOAK_WORKER')) * 104_729 + Number(env('SOAK_INCARNATION')));
  const between = (min: number, max: number) => min + random() * (max - min);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  // Commands wait out a Redis restart instead of failing (the history must not lose entries).
  const redis = new Redis(env('SOAK_STORE_URL'), { maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
  const store = new SoakStore(redis, soakKeys(prefix));
  const app = await NestFactory.createApplicationContext(
    RedisLockModule.forRoot({
      redis: libConnection(env('SOAK_LIB_URL')),
      keyPrefix: `${prefix}:lib`,
      connectTimeout: 0, // started while Redis may be restarting or black-holed: connect when it can
      lock: { leaseTime: LOCK_LEASE_MS },
      delayQueue: { maxAttempts: 1000, visibilityTimeout: JOB_VISIBILITY_MS, backoff: { delay: 100, maxDelay: 2_000 } },
    }),
    { logger: ['error'] },
  );
  const locks = app.get(LockService);
  const queue = app.get(DelayQueueService);
  let producing = true;
  let holdSequence = 0;

  queue.consume(
    SOAK_TOPIC,
    async (_payload, job) => {
      try {
        // One event per handler run: a job handled twice has two.
        await store.record({ w: me, op: 'run', job: job.id, attempt: job.attempt });
      } catch (error) {
        stats.handlerErrors++;
        throw error; // retried with backoff: at-least-once
      }
      stats.handlerRuns++;
      await sleep(between(5, 50));
    },
    { concurrency: 4 },
  );

  const selected = (process.env.SOAK_OPERATIONS ?? Object.keys(OPERATION_WEIGHTS).join(',')).split(',');
  const kinds = Object.entries(OPERATION_WEIGHTS)
    .filter(([kind]) => selected.includes(kind))
    .flatMap(([kind, weight]) => Array<LockKind>(weight).fill(kind as LockKind));

  /** The fence refused `hold`: record whether the library still said it held the lock. */
  async function refused(hold: string, kind: LockKind, key: string, token: string, lock: LockHandle): Promise<void> {
    stats.staleStoppedByFence++;
    await store.record({ w: me, op: 'held-check', hold, kind, key, token, held: await stillHeld(lock) });
  }

  /**
   * The fenced section of a hold on its keys: enter every key, then (exclusive holds) write each
   * counter + 1, then leave. Stops at the first refusal. `middle` runs between enter and write.
   */
  async function fencedSection(
    hold: string,
    kind: LockKind,
    lock: LockHandle,
    parts: ReadonlyArray<readonly [string, string]>,
    middle?: () => Promise<LockHandle | undefined>,
  ): Promise<void> {
    const values = new Map<string, number>();
    for (const [key, token] of parts) {
      const entered = await store.fenced({ w: me, op: 'enter', hold, kind, key, token });
      if (!entered.ok) return refused(hold, kind, key, token, lock);
      values.set(key, Number(entered.value ?? 0));
    }
    await sleep(between(0, 30));
    const writer = (await middle?.()) ?? lock;
    try {
      if (kind !== 'read') {
        // A re-entered hold writes with the nested handle's token, which must be the section's.
        for (const [key] of parts) {
          const token = tokenOf(writer, key);
          const written = await store.fenced({ w: me, op: 'write', hold, kind, key, token, value: values.get(key)! + 1 });
          if (!written.ok) return await refused(hold, kind, key, token, lock);
        }
      }
    } finally {
      if (writer !== lock) await writer.release();
    }
    for (const [key, token] of parts) {
      const left = await store.fenced({ w: me, op: 'leave', hold, kind, key, token });
      if (!left.ok) return refused(hold, kind, key, token, lock);
    }
  }

  /** The fencing token of `key` in a hold (a multi-key hold has one per key, in `fencingTokens`). */
  function tokenOf(lock: LockHandle, key: string): string {
    const token = lock.fencingTokens?.[key];
    if (token !== undefined) return token;
    throw new Error(`${key}: no fencing token in ${JSON.stringify(lock.fencingTokens)} (fencingToken ${lock.fencingToken})`);
  }

  function partsOf(keys: readonly string[], lock: LockHandle): Array<readonly [string, string]> {
    return keys.map((key) => [key, tokenOf(lock, key)] as const);
  }

  async function lockOperation(kind: LockKind): Promise<void> {
    const hold = `${me}.${holdSequence++}`;
    const waitTimeout = Math.round(between(500, 4_000));
    const keys =
      kind === 'multi'
        ? [...new Set([pick(EXCLUSIVE_KEYS), pick(EXCLUSIVE_KEYS)])].sort()
        : kind === 'fair'
          ? [pick(FAIR_KEYS)]
          : kind === 'read' || kind === 'write'
            ? [READ_WRITE_KEY]
            : kind === 'semaphore'
              ? [SEMAPHORE_KEY]
              : [pick(EXCLUSIVE_KEYS)];
    stats.operations++;
    await store.record({ w: me, op: 'acquire-invoke', hold, kind, keys });
    const sentAt = Date.now();
    let token: string | undefined;
    const failed = async (error: unknown) => {
      stats.acquireFailed++;
      await store.record({ w: me, op: 'acquire-failed', hold, kind, keys, error: errorCode(error) });
      await sleep(between(20, 200));
    };
    const released = async () => {
      await store.record({ w: me, op: 'release', hold, kind, keys, token });
    };

    if (kind === 'reentrant') {
      let entered = false;
      try {
        await locks.using(
          keys[0],
          async (outer) => {
            entered = true;
            stats.acquired++;
            token = outer.fencingToken;
            await fencedSection(hold, kind, outer, partsOf(keys, outer), async () => {
              try {
                return await locks.acquire(keys[0], { waitTimeout: 1_000 });
              } catch (error) {
                stats.lockErrors++;
                await store.record({ w: me, op: 'acquire-failed', hold, kind, keys, error: `re-entry: ${errorCode(error)}` });
                return undefined;
              }
            });
          },
          { waitTimeout },
        );
      } catch (error) {
        if (!entered) return failed(error);
        stats.lockErrors++;
        await store.record({ w: me, op: 'release-failed', hold, kind, keys, token, error: errorCode(error) });
        return;
      }
      return released();
    }

    let lock: LockHandle | null;
    try {
      if (kind === 'semaphore') {
        const semaphore = locks.semaphore(SEMAPHORE_KEY, SEMAPHORE_PERMITS);
        lock =
          random() < 0.5
            ? await semaphore.tryAcquire({ leaseTime: SEMAPHORE_LEASE_MS })
            : await semaphore.acquire({ leaseTime: SEMAPHORE_LEASE_MS, waitTimeout });
      } else if (kind === 'read') lock = await locks.readWrite(READ_WRITE_KEY).read({ waitTimeout });
      else if (kind === 'write') lock = await locks.readWrite(READ_WRITE_KEY).write({ waitTimeout });
      else if (kind === 'fair') lock = await locks.acquire(keys[0], { waitTimeout, fair: true });
      else if (kind === 'extend') lock = await locks.acquire(keys[0], { waitTimeout, leaseTime: LOCK_LEASE_MS });
      else lock = await locks.acquire(kind === 'multi' ? keys : keys[0], { waitTimeout });
    } catch (error) {
      return failed(error);
    }
    if (!lock) return failed('none free');
    stats.acquired++;
    // The history keeps a hold's tokens as its keys' tokens joined by ',' in key order.
    token = kind === 'semaphore' ? lock.fencingToken : keys.map((key) => tokenOf(lock, key)).join(',');
    try {
      if (kind === 'semaphore') {
        // The permit's lease (Redis TIME at grant + lease) ends no earlier than sentAt + lease: both clocks are this machine's.
        const entered = await store.semaphoreEnter({
          w: me,
          op: 'sem-enter',
          hold,
          kind,
          key: SEMAPHORE_KEY,
          token,
          endsAtMs: sentAt + SEMAPHORE_LEASE_MS,
        });
        if (entered.ok) {
          await sleep(between(10, 100));
          await store.record({ w: me, op: 'sem-leave', hold, kind, key: SEMAPHORE_KEY, token });
        }
      } else {
        const held = lock;
        await fencedSection(hold, kind, lock, partsOf(keys, lock), async () => {
          if (kind === 'extend') {
            try {
              await held.extend(LOCK_LEASE_MS);
              await store.record({ w: me, op: 'extend', hold, kind, keys, token });
            } catch (error) {
              await store.record({ w: me, op: 'extend', hold, kind, keys, token, error: errorCode(error) });
            }
          }
          return undefined;
        });
      }
    } finally {
      let releaseError: unknown;
      try {
        await lock.release();
      } catch (error) {
        releaseError = error ?? 'rejected';
      }
      if (releaseError === undefined) await released();
      else {
        stats.lockErrors++;
        await store.record({ w: me, op: 'release-failed', hold, kind, keys, token, error: errorCode(releaseError) });
      }
    }
  }

  async function operationLoop(): Promise<void> {
    while (producing) {
      try {
        await lockOperation(pick(kinds));
      } catch (error) {
        stats.lockErrors++;
        process.stderr.write(`${me}: operation failed: ${(error as Error)?.stack ?? error}\n`);
        await sleep(between(50, 250));
      }
    }
  }

  async function produce(): Promise<void> {
    let n = 0;
    while (producing) {
      const job = `${me}.j${n++}`;
      const delay = Math.floor(between(0, 2_000));
      const byAt = random() < 0.3;
      const atMs = Date.now() + delay;
      await store.record(byAt ? { w: me, op: 'schedule-invoke', job, atMs } : { w: me, op: 'schedule-invoke', job, delayMs: delay });
      try {
        await queue.schedule(SOAK_TOPIC, { job }, byAt ? { id: job, at: atMs } : { id: job, delay });
      } catch (error) {
        stats.scheduleErrors++; // the job may or may not run: only a resolved schedule() must
        await store.record({ w: me, op: 'schedule-failed', job, error: errorCode(error) });
        await sleep(between(50, 250));
        continue;
      }
      await store.record({ w: me, op: 'scheduled', job });
      stats.jobsScheduled++;
      await sleep(between(100, 300));
    }
  }

  const report = () => process.stdout.write(`STATS ${JSON.stringify(stats)}\n`);
  const reporter = setInterval(report, 1_000);
  const work = Promise.all([...Array.from({ length: OPERATION_LOOPS }, () => operationLoop()), produce()]);
  process.on('SIGUSR2', () => {
    producing = false;
    // Every schedule() and lock operation under way has finished and is in the history.
    void work.then(() => process.stdout.write('IDLE\n'));
  });
  process.once('SIGTERM', () => {
    producing = false;
    void (async () => {
      await work;
      await app.close();
      clearInterval(reporter);
      report();
      redis.disconnect();
      process.exit(0);
    })().catch((error: unknown) => {
      process.stderr.write(`${me}: shutdown failed: ${(error as Error)?.stack ?? error}\n`);
      process.exit(1);
    });
  });
  process.stdout.write('READY\n');
  await work;
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error)?.stack ?? error}\n`);
  process.exit(1);
});

/**
 * The library's connection: on the driver `REDIS_LOCK_TEST_DRIVER` names (the per-driver test lanes
 * set it; tools/run-driver-tests.js), ioredis by default.
 */
function libConnection(url: string): RedisConnectionOptions {
  const driver = process.env.REDIS_LOCK_TEST_DRIVER;
  return driver === undefined || driver === 'ioredis' ? url : ({ driver, url } as RedisConnectionOptions);
}
