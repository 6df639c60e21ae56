/**
 * One soak worker process (started, killed and restarted by tools/soak/soak.ts). It reaches Redis
 * for the library through its own fault proxy, and keeps its bookkeeping (tools/soak/soak-store.ts)
 * over a direct connection. Concurrently, until told to stop:
 *
 * - mutex loops: take a lock (a plain one and a fair one, alternately), read the lock's fenced row
 *   with the fencing token, wait a little, write value + 1 with the token, release;
 * - a semaphore loop: take one of SEMAPHORE_PERMITS permits with a fixed lease, register in the
 *   occupants set (which counts who else is inside), work a little, leave, release;
 * - a producer: schedules a job every 100-300 ms, due in 0-2 s, and records its id once scheduled;
 * - a consumer of the same topic, whose handler records every run in the ledger.
 *
 * stdout, one line each: `READY`, `STATS <json>` (cumulative, every second and at exit) and
 * `VIOLATION <json>` the moment one is seen. SIGUSR2: stop producing work (keep consuming).
 * SIGTERM: stop, shut the application down gracefully, print the last STATS, exit 0.
 *
 * Environment: SOAK_LIB_URL, SOAK_STORE_URL, SOAK_PREFIX, SOAK_WORKER, SOAK_INCARNATION.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { DelayQueueService, LockService, RedisLockModule, type LockHandle } from '../../lib';
import {
  JOB_VISIBILITY_MS,
  LOCK_LEASE_MS,
  MUTEX_KEYS,
  SEMAPHORE_LEASE_MS,
  SEMAPHORE_PERMITS,
  SOAK_TOPIC,
  type WorkerStats,
} from './soak-constants';
import { enterSemaphore, fencedRead, fencedWrite, leaveSemaphore, soakKeys } from './soak-store';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const stats: WorkerStats = {
  lockSections: 0,
  fencedWritesAccepted: 0,
  staleRejected: 0,
  lockTimeouts: 0,
  lockErrors: 0,
  semaphoreSections: 0,
  semaphoreSkipped: 0,
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
const between = (min: number, max: number) => min + Math.random() * (max - min);

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
  const keys = soakKeys(prefix);
  // Commands wait out a Redis restart instead of failing (the bookkeeping must not lose entries).
  const store = new Redis(env('SOAK_STORE_URL'), { maxRetriesPerRequest: null });
  store.on('error', () => undefined);
  const app = await NestFactory.createApplicationContext(
    RedisLockModule.forRoot({
      redis: env('SOAK_LIB_URL'),
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

  queue.consume(
    SOAK_TOPIC,
    async (_payload, job) => {
      await sleep(between(5, 50));
      try {
        // One entry per handler run: a job handled twice has two entries.
        await store.sadd(keys.handlings, `${job.id}|${randomBytes(6).toString('hex')}`);
      } catch (error) {
        stats.handlerErrors++;
        throw error; // retried with backoff: at-least-once
      }
      stats.handlerRuns++;
    },
    { concurrency: 4 },
  );

  async function mutexLoop(): Promise<void> {
    let round = 0;
    while (producing) {
      const { name, fair } = MUTEX_KEYS[round++ % MUTEX_KEYS.length];
      const row = keys.row(name);
      let lock: LockHandle;
      try {
        lock = await locks.acquire(name, { waitTimeout: 5_000, fair });
      } catch (error) {
        if ((error as { code?: string }).code === 'LOCK_ACQUIRE_TIMEOUT') stats.lockTimeouts++;
        else stats.lockErrors++;
        await sleep(between(50, 250));
        continue;
      }
      try {
        const read = await fencedRead(store, row, lock.fencingToken);
        if (!read.ok) {
          await refused(lock, 'read', read.seen);
          continue;
        }
        await sleep(between(0, 30));
        const written = await fencedWrite(store, row, lock.fencingToken, read.value + 1);
        if (written === -1) await refused(lock, 'write');
        else if (written === 1) stats.fencedWritesAccepted++;
        stats.lockSections++;
      } finally {
        await lock.release().catch(() => stats.lockErrors++);
      }
    }
  }

  /** The fenced row refused this holder: someone with a newer token got in. Only fine if our lease is gone. */
  async function refused(lock: LockHandle, op: 'read' | 'write', seen?: number): Promise<void> {
    if (await stillHeld(lock)) {
      violation('two-holders-at-once', { worker: me, lock: lock.key, token: lock.fencingToken, op, newerTokenSeen: seen });
    } else {
      stats.staleRejected++;
    }
  }

  async function semaphoreLoop(): Promise<void> {
    const semaphore = locks.semaphore('permits', SEMAPHORE_PERMITS);
    while (producing) {
      // tryAcquire sends its one attempt at once, so the permit's lease (Redis TIME + lease) ends no
      // earlier than this moment + lease: a safe bound, with both clocks on this machine.
      const sentAt = Date.now();
      let permit: LockHandle | null;
      try {
        permit = await semaphore.tryAcquire({ leaseTime: SEMAPHORE_LEASE_MS });
      } catch {
        stats.lockErrors++;
        await sleep(between(50, 250));
        continue;
      }
      if (!permit) {
        await sleep(between(10, 60));
        continue;
      }
      const member = `${me}:${permit.fencingToken}`;
      try {
        const others = await enterSemaphore(store, keys, member, sentAt + SEMAPHORE_LEASE_MS);
        if (others < 0) {
          stats.semaphoreSkipped++; // the permit's lease ran out before we got here (a fault slowed us)
          continue;
        }
        if (others >= SEMAPHORE_PERMITS) {
          violation('too-many-semaphore-holders', { worker: me, token: permit.fencingToken, holdersIncludingMe: others + 1 });
        }
        await sleep(between(10, 100));
        await leaveSemaphore(store, keys, member);
        stats.semaphoreSections++;
      } finally {
        await permit.release().catch(() => stats.lockErrors++);
      }
    }
  }

  async function produce(): Promise<void> {
    let n = 0;
    while (producing) {
      const id = `${me}.${n++}`;
      try {
        await queue.schedule(SOAK_TOPIC, { id }, { id, delay: Math.floor(between(0, 2_000)) });
      } catch {
        stats.scheduleErrors++; // not recorded, so not expected: only a resolved schedule() counts
        await sleep(between(50, 250));
        continue;
      }
      await store.sadd(keys.scheduled, id);
      stats.jobsScheduled++;
      await sleep(between(100, 300));
    }
  }

  const report = () => process.stdout.write(`STATS ${JSON.stringify(stats)}\n`);
  const reporter = setInterval(report, 1_000);
  const work = Promise.all([mutexLoop(), mutexLoop(), semaphoreLoop(), produce()]);
  process.on('SIGUSR2', () => (producing = false));
  process.once('SIGTERM', () => {
    producing = false;
    void (async () => {
      await work;
      await app.close();
      clearInterval(reporter);
      report();
      store.disconnect();
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
