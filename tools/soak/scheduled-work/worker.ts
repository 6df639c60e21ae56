/**
 * One worker of the scheduled-work checker (started, killed, paused and restarted by driver.ts): an
 * application with the module, a transactional outbox on the shared PostgreSQL database, consumers
 * of the job and tick topics, an `@OnOneInstance` method called by a timer and a `@LeaderElection`
 * provider. It reaches Redis through its own fault proxy (slot 0 with an ioredis client of its own,
 * the others with the module's connections) and records every effect in its own
 * history file (history-file.ts); it judges nothing itself.
 *
 * Concurrently, until told to stop:
 * - a producer: a transaction every 100-400 ms that inserts an order and schedules its job through
 *   the outbox, then commits (80 %) or rolls back (20 %);
 * - a churn loop on two schedule ids of its own (one changed with direct calls, one inside
 *   transactions through the outbox): `repeat()` (every 250 ms), then `removeRepeat()` while its
 *   ticks run, then `repeat()` again, ...
 * - at start, `repeat()` of the fixed schedules (every worker does, as every instance of an app does);
 * - consumers: every handler run is recorded (`run`, `run-end`);
 * - `@OnOneInstance`: every 200 ms; the method records `one-obs` at its start and once more after a
 *   short await: the run lock's token and whether its signal was still live;
 * - `@LeaderElection`: the leader's loop records `leader-obs` every 50 ms: whether `held` and the
 *   signal still said it led.
 * Each observation takes the clock first and reads the state after it: a `valid` observation claims
 * the state held at that time.
 *
 * stdout: `READY`, `IDLE` (after SIGUSR2: no transaction or churn call under way any more, none will start).
 * SIGUSR1: the next transaction that commits SIGKILLs this process from its after-commit hook, before
 * the outbox writes anything to Redis (the `committed` line says `killed: true`).
 * SIGTERM: stop, close the application, exit 0.
 *
 * Environment: SW_REDIS_URL (the proxy), SW_PG_URL, SW_PREFIX, SW_SLOT, SW_INCARNATION, SW_SEED, SW_DIR.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { Pool } from 'pg';
import {
  DelayQueueService,
  LeaderElection,
  LockContext,
  OnOneInstance,
  RedisLockModule,
  TransactionSynchronizer,
  type LeadershipHooks,
  type LockHandle,
  type TransactionSynchronizer as Synchronizer,
} from '../../../lib/index.js';
import { inPgTransaction, PostgresJobOutbox } from '../../../lib/outbox/postgres/index.js';
import { PgTransactions } from '../../../test/outbox/support/outbox-harness.js';
import {
  CHURN_EVERY_MS,
  CLAIM_LEASE_MS,
  FIXED_SCHEDULES,
  JOB_TOPIC,
  LEADER_KEY,
  LEADER_LOOP_MS,
  LEASE_MS,
  monotonicUs,
  ONE_INSTANCE_KEY,
  ONE_INSTANCE_PERIOD_MS,
  ORDERS_TABLE,
  OUTBOX_TABLE,
  seededRandom,
  TICK_TOPIC,
  VISIBILITY_MS,
} from './constants.js';
import { HistoryWriter } from './history-file.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const slot = Number(env('SW_SLOT'));
const incarnation = Number(env('SW_INCARNATION'));
const me = `w${slot}.${incarnation}`;
const history = new HistoryWriter(env('SW_DIR'), me);
const random = seededRandom(Number(env('SW_SEED')) * 7_919 + slot * 104_729 + incarnation * 31);
const between = (min: number, max: number) => min + random() * (max - min);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const errorText = (error: unknown) => `${(error as Error)?.name ?? 'Error'}: ${String((error as Error)?.message ?? error).slice(0, 160)}`;

process.on('unhandledRejection', (reason) => {
  process.stdout.write(
    `VIOLATION ${JSON.stringify({ kind: 'unhandled-rejection', worker: me, reason: String((reason as Error)?.stack ?? reason) })}\n`,
  );
});

let stopping = false;
let killAfterCommit = false;
// Installed before anything else: a signal that arrives while the application boots must not kill
// the process with the default action (the driver signals respawned workers too).
const wanted = { idle: false, exit: false };
let onStopSignal: () => void = () => undefined;
process.on('SIGUSR1', () => (killAfterCommit = true));
process.on('SIGUSR2', () => {
  stopping = true;
  wanted.idle = true;
  onStopSignal();
});
process.on('SIGTERM', () => {
  stopping = true;
  wanted.exit = true;
  onStopSignal();
});

@Injectable()
class OneInstanceWork {
  @OnOneInstance({ key: ONE_INSTANCE_KEY, ttl: LEASE_MS })
  async tick(n: number): Promise<void> {
    const run = LockContext.current();
    if (!run) throw new Error('@OnOneInstance ran without a LockContext');
    const observe = () => {
      const m = monotonicUs();
      history.record({ op: 'one-obs', n, token: run.fencingToken, valid: !run.signal.aborted }, m);
    };
    observe();
    await sleep(between(10, 60));
    observe();
  }
}

@Injectable()
@LeaderElection(LEADER_KEY, { ttl: LEASE_MS })
class Leader implements LeadershipHooks {
  onLeadershipAcquired(lock: LockHandle): void {
    history.record({ op: 'leader-acquired', token: lock.fencingToken, valid: lock.held && !lock.signal.aborted });
    void (async () => {
      // What the leader's own code sees on every turn of its loop.
      for (;;) {
        const m = monotonicUs();
        const valid = lock.held && !lock.signal.aborted;
        history.record({ op: 'leader-obs', token: lock.fencingToken, valid }, m);
        if (!valid) return;
        await sleep(LEADER_LOOP_MS);
      }
    })();
  }

  onLeadershipLost(lock: LockHandle): void {
    const reason = lock.signal.reason as Error | undefined;
    history.record({ op: 'leader-lost', token: lock.fencingToken, reason: reason ? errorText(reason) : undefined });
  }
}

async function main(): Promise<void> {
  const pool = new Pool({ connectionString: env('SW_PG_URL'), max: 4 });
  pool.on('error', () => undefined);
  const tx = new PgTransactions(pool);

  // Slot 0 hands the module an ioredis client of its own (`{ client }`, ioredis defaults: no socket
  // timeout), so a stalled link stays open and delivers its held commands when it heals; the other
  // slots let the module build its connections (which drop a silent socket).
  const ownClient = slot === 0 ? new Redis(env('SW_REDIS_URL'), { lazyConnect: true }) : undefined;
  ownClient?.on('error', () => undefined);

  @Module({
    imports: [
      RedisLockModule.forRoot({
        redis: ownClient ? { client: ownClient } : env('SW_REDIS_URL'),
        keyPrefix: env('SW_PREFIX'),
        connectTimeout: 0, // started while Redis may be restarting or its link stalled: connect when it can
        delayQueue: {
          visibilityTimeout: VISIBILITY_MS,
          maxAttempts: 1_000,
          backoff: { delay: 100, maxDelay: 1_000 },
          outbox: new PostgresJobOutbox({ transaction: inPgTransaction(tx.current), relay: pool, table: OUTBOX_TABLE }),
          outboxRelay: { pollInterval: 300, minAge: 500, claimLease: CLAIM_LEASE_MS },
        },
      }),
    ],
    providers: [OneInstanceWork, Leader],
  })
  class WorkerModule {}

  const app = await NestFactory.createApplicationContext(WorkerModule, { logger: ['error'] });
  const queue = app.get(DelayQueueService);
  const transactions = app.get<Synchronizer>(TransactionSynchronizer);

  for (const topic of [JOB_TOPIC, TICK_TOPIC]) {
    queue.consume(
      topic,
      async (_payload, job) => {
        history.record({ op: 'run', topic, job: job.id, attempt: job.attempt, token: job.fencingToken });
        await sleep(between(5, 40));
        history.record({ op: 'run-end', topic, job: job.id, attempt: job.attempt, token: job.fencingToken });
      },
      { concurrency: 2 },
    );
  }

  /** Retries `call` until it resolves (Redis may be down or restarting); gives up once stopping. */
  async function untilDone(what: string, call: () => Promise<unknown>): Promise<void> {
    while (!stopping) {
      try {
        await call();
        return;
      } catch (error) {
        process.stderr.write(`${me}: ${what}: ${errorText(error)} (retrying)\n`);
        await sleep(between(200, 600));
      }
    }
  }
  const fixed = Promise.all(
    FIXED_SCHEDULES.map(({ id, every }) => untilDone(`repeat ${id}`, () => queue.repeat(TICK_TOPIC, { every }, { id, payload: { id } }))),
  );

  /** One transaction: BEGIN, `work`, COMMIT (or ROLLBACK when `rollback`); the SIGUSR1 kill hooks in here. */
  async function transaction(work: () => Promise<void>, rollback: boolean, onKill: () => void): Promise<void> {
    await tx.run(async (client) => {
      if (killAfterCommit) {
        // Registered before the outbox's own hook, so it runs first: the process dies after COMMIT
        // and before anything of this transaction reaches Redis.
        transactions.register({
          afterCompletion: (status) => {
            if (status !== 'committed') return;
            onKill();
            process.kill(process.pid, 'SIGKILL');
          },
        });
      }
      await work();
      await client.query('SELECT 1');
      if (rollback) throw new RollBack();
    });
  }

  async function produce(): Promise<void> {
    let n = 0;
    while (!stopping) {
      const job = `${me}.o${n++}`;
      const intent = random() < 0.8 ? 'commit' : 'rollback';
      const delay = Math.floor(between(0, 800));
      history.record({ op: 'tx-begin', job, intent, delay });
      try {
        await transaction(
          async () => {
            await tx.current()!.query(`INSERT INTO ${ORDERS_TABLE} (id) VALUES ($1)`, [job]);
            await queue.schedule(JOB_TOPIC, { job }, { id: job, delay });
          },
          intent === 'rollback',
          () => history.record({ op: 'committed', job, killed: true }),
        );
        history.record({ op: 'committed', job });
      } catch (error) {
        if (error instanceof RollBack) history.record({ op: 'rolled-back', job });
        else history.record({ op: 'tx-failed', job, error: errorText(error) });
      }
      await sleep(between(100, 400));
    }
  }

  /** Creates and removes schedules of its own while their ticks run: one id by direct calls, one through the outbox. */
  async function churn(via: 'direct' | 'tx'): Promise<void> {
    const id = `c${slot}.${incarnation}.${via}`;
    let present = false;
    while (!stopping) {
      const op = present ? 'remove' : 'repeat';
      history.record({ op: `${op}-invoke`, id, via, every: CHURN_EVERY_MS });
      const call = () =>
        op === 'remove' ? queue.removeRepeat(TICK_TOPIC, id) : queue.repeat(TICK_TOPIC, { every: CHURN_EVERY_MS }, { id, payload: { id } });
      try {
        if (via === 'direct') await call();
        else
          await transaction(
            async () => void (await call()),
            false,
            () => history.record({ op: `${op}-done`, id, via, killed: true }),
          );
        history.record({ op: `${op}-done`, id, via });
        present = !present;
      } catch (error) {
        history.record({ op: 'churn-failed', id, via, error: errorText(error) });
      }
      // Long enough for a few ticks, short enough that removals race them.
      await sleep(between(CHURN_EVERY_MS * 0.5, CHURN_EVERY_MS * 5));
    }
  }

  // A timer like a cron's on every instance: it fires at each multiple of the period of the wall
  // clock, this slot 15 ms after the others before it (skewed timers), and calls the method with the
  // tick's number, the same on every instance. A late timer (a paused process) fires once, for the
  // tick it fires in, like setInterval.
  const oneInstance = app.get(OneInstanceWork);
  const offset = (slot * 15) % ONE_INSTANCE_PERIOD_MS;
  const tickNow = () => Math.floor((Date.now() - offset) / ONE_INSTANCE_PERIOD_MS);
  let timer: NodeJS.Timeout | undefined;
  const arm = (target: number) => {
    timer = setTimeout(
      () => {
        if (stopping) return;
        // A timer may fire a little before the wall clock reaches its boundary: it is still that tick.
        const tick = Math.max(target, tickNow());
        void oneInstance.tick(tick).catch((error: unknown) => process.stderr.write(`${me}: @OnOneInstance call: ${errorText(error)}\n`));
        arm(tick + 1);
      },
      Math.max(0, target * ONE_INSTANCE_PERIOD_MS + offset - Date.now()),
    );
  };
  arm(tickNow() + 1);

  /**
   * Removes the schedules earlier incarnations of this slot left behind (a killed worker's churn
   * ids would tick for ever), as a direct removal the checker judges like any other. A schedule
   * change such an incarnation committed through the outbox is waited for first: once its row is
   * gone from the outbox it has been applied, so the removal comes after it.
   */
  async function cleanUp(): Promise<void> {
    for (let earlier = 1; earlier < incarnation && !stopping; earlier++) {
      for (const via of ['direct', 'tx'] as const) {
        const id = `c${slot}.${earlier}.${via}`;
        for (let waited = 0; waited < 30_000 && !stopping; waited += 300) {
          const left = await pool
            .query(`SELECT 1 FROM ${OUTBOX_TABLE} WHERE job_id = $1 AND parked_at IS NULL LIMIT 1`, [id])
            .catch(() => ({ rowCount: 1 }));
          if (left.rowCount === 0) break;
          await sleep(300);
        }
        history.record({ op: 'remove-invoke', id, via: 'direct' });
        await untilDone(`remove ${id}`, () => queue.removeRepeat(TICK_TOPIC, id));
        if (!stopping) history.record({ op: 'remove-done', id, via: 'direct' });
      }
    }
  }

  const work = Promise.all([fixed, cleanUp(), produce(), churn('direct'), churn('tx')]);
  let exiting = false;
  onStopSignal = () => {
    if (wanted.idle) void work.then(() => process.stdout.write('IDLE\n'));
    if (!wanted.exit || exiting) return;
    exiting = true;
    clearTimeout(timer);
    void (async () => {
      await work;
      await app.close();
      ownClient?.disconnect();
      await pool.end();
      history.close();
      process.exit(0);
    })().catch((error: unknown) => {
      process.stderr.write(`${me}: shutdown failed: ${(error as Error)?.stack ?? error}\n`);
      process.exit(1);
    });
  };
  process.stdout.write('READY\n');
  onStopSignal(); // a signal that came while the application booted
  await work;
}

class RollBack extends Error {
  constructor() {
    super('rolled back on purpose');
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${me}: ${(error as Error)?.stack ?? error}\n`);
  process.exit(1);
});
