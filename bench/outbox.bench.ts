/**
 * Transactional outbox benchmark (issue 16): what scheduling a job inside a PostgreSQL transaction
 * costs with the outbox (`delayQueue.outbox`), next to the after-commit write (no outbox) and to a
 * plain `schedule()` outside any transaction, on a private PostgreSQL and a private Redis.
 *
 *   npm run bench:outbox           (needs PostgreSQL server binaries, as the tests do)
 *   BENCH_QUICK=1 npm run bench:outbox   (a smoke run: smaller; numbers not comparable)
 *
 * (a) transaction time: one transaction at a time, BEGIN; INSERT an order; schedule its job; COMMIT,
 *     timed from BEGIN until the unit of work has ended (for the outbox and the after-commit write,
 *     that includes the write to Redis right after COMMIT). Modes: no job (baseline), plain
 *     (schedule() after COMMIT, outside the transaction), after-commit (runInTransaction, no outbox),
 *     outbox. "added" is the mode's median minus the baseline's median.
 * (b) latency after COMMIT: from COMMIT to the job's handler starting (delay 0), per mode.
 * (c) relay throughput: a backlog of rows left behind (inserted without relaying), drained by one
 *     instance's relay (batch 500): rows/s from its start until the outbox is empty.
 *
 * Writes bench/results/outbox-latest.md and exits.
 */
import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import type { TestingModule } from '@nestjs/testing';
import { DelayQueueService, runInTransaction } from '../lib/index.js';
import { inPgTransaction, PostgresJobOutbox } from '../lib/outbox/postgres/index.js';
import { initRedisLockTestingModule } from '../lib/testing/index.js';
import { startLocalRedisServer } from '../lib/testing/local-redis-server.js';
import { startLocalPostgres } from '../test/support/postgres.js';
import { PgTransactions } from '../test/outbox/support/outbox-harness.js';
import { distribution, markdown, sleep, until, type Distribution } from './support/delay-stats.js';

const QUICK = process.env.BENCH_QUICK === '1';
const PLAN = { transactions: QUICK ? 100 : 1000, warmup: QUICK ? 20 : 100, backlog: QUICK ? 2000 : 20_000 };
const RESULTS_DIR = join(import.meta.dirname, 'results');
type Mode = 'baseline' | 'plain' | 'after-commit' | 'outbox';

const postgres = await startLocalPostgres();
const redis = await startLocalRedisServer();
const pool = new Pool({ connectionString: postgres.url, max: 8 });
const tx = new PgTransactions(pool);
const store = () => new PostgresJobOutbox({ transaction: inPgTransaction(tx.current), relay: pool });
await pool.query(store().migration);
await pool.query('CREATE TABLE orders (id serial PRIMARY KEY, ref text NOT NULL)');

async function app(outbox: boolean, relay?: { minAge: number; batchSize?: number }): Promise<TestingModule> {
  return initRedisLockTestingModule({
    redis: redis.url,
    redisLock: { keyPrefix: 'bench', delayQueue: outbox ? { outbox: store(), outboxRelay: relay ?? {} } : {} },
  });
}

const withoutOutbox = await app(false);
const withOutbox = await app(true);
const started = new Map<string, number>();
for (const module of [withoutOutbox, withOutbox]) {
  module.get(DelayQueueService).consume('bench.job', (_payload, job) => void started.set(job.id, performance.now()), { concurrency: 16 });
}

async function oneTransaction(mode: Mode, i: number): Promise<{ ms: number; committedAt: number; id?: string }> {
  const queue = (mode === 'outbox' ? withOutbox : withoutOutbox).get(DelayQueueService);
  const t0 = performance.now();
  let committedAt = 0;
  let id: string | undefined;
  if (mode === 'baseline' || mode === 'plain') {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('INSERT INTO orders (ref) VALUES ($1)', [`o${i}`]);
      await client.query('COMMIT');
      committedAt = performance.now();
    } finally {
      client.release();
    }
    if (mode === 'plain') id = await queue.schedule('bench.job', { i });
  } else {
    // after-commit: the built-in unit of work around BEGIN/COMMIT; outbox: the same, plus the row in the transaction.
    await runInTransaction(async () => {
      await tx.run(async (client) => {
        await client.query('INSERT INTO orders (ref) VALUES ($1)', [`o${i}`]);
        id = await queue.schedule('bench.job', { i });
      });
      committedAt = performance.now();
    });
  }
  return { ms: performance.now() - t0, committedAt, id };
}

const modes: Mode[] = ['baseline', 'plain', 'after-commit', 'outbox'];
const txTimes = new Map<Mode, Distribution>();
const latencies = new Map<Mode, Distribution>();
for (const mode of modes) {
  for (let i = 0; i < PLAN.warmup; i++) await oneTransaction(mode, i);
  const times: number[] = [];
  const commits: Array<{ id: string; committedAt: number }> = [];
  for (let i = 0; i < PLAN.transactions; i++) {
    const r = await oneTransaction(mode, i);
    times.push(r.ms);
    if (r.id) commits.push({ id: r.id, committedAt: r.committedAt });
  }
  txTimes.set(mode, distribution(times));
  if (commits.length > 0) {
    await until(() => commits.every((c) => started.has(c.id)), 120_000, `${mode} jobs to run`);
    latencies.set(mode, distribution(commits.map((c) => started.get(c.id)! - c.committedAt)));
  }
  console.log(`${mode}: transaction p50 ${txTimes.get(mode)!.p50.toFixed(2)} ms`);
}

// (c) relay throughput from a backlog.
await withOutbox.close();
const backlogClient = await pool.connect();
await backlogClient.query('BEGIN');
const inserter = new PostgresJobOutbox({ transaction: inPgTransaction(() => backlogClient), relay: pool });
for (let start = 0; start < PLAN.backlog; start += 1000) {
  await inserter.insert(
    Array.from({ length: Math.min(1000, PLAN.backlog - start) }, (_, k) => ({
      rowId: `backlog-${start + k}`,
      topic: 'bench.backlog',
      jobId: `backlog-${start + k}`,
      kind: 'delay' as const,
      when: 0,
      replace: false,
      body: ',"m":null,"b":null,"e":null,"p":1}',
    })),
  );
}
await backlogClient.query('COMMIT');
backlogClient.release();
const relayStart = performance.now();
const relaying = await app(true, { minAge: 0, batchSize: 500 });
const appStartMs = performance.now() - relayStart;
const { rows: leftAfterStart } = await pool.query('SELECT count(*)::int AS n FROM redis_lock_job_outbox');
const drainStart = performance.now();
for (;;) {
  const { rows } = await pool.query('SELECT count(*)::int AS n FROM redis_lock_job_outbox');
  if (rows[0].n === 0) break;
  await sleep(20);
}
const relaySeconds = (performance.now() - relayStart) / 1000;
const drainSeconds = (performance.now() - drainStart) / 1000;
await relaying.close();
await withoutOutbox.close();

const fmt = (n: number) => n.toFixed(2);
// Medians: on a shared machine a few stalled transactions move a mean by more than the difference measured.
const baselineP50 = txTimes.get('baseline')!.p50;
const report = [
  '# Transactional outbox benchmark',
  '',
  `Run ${new Date().toISOString()} on ${cpus().length} CPUs (load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ')}; other work was running: compare ratios, not absolutes). ` +
    (`PostgreSQL and Redis private to the run, on loopback. ${PLAN.transactions} transactions per mode ` +
      `after ${PLAN.warmup} warm-up ones.${QUICK ? ' QUICK run.' : ''}`),
  '',
  '## (a) Transaction time, BEGIN to the end of the unit of work (ms)',
  '',
  markdown(
    ['mode', 'p50', 'p99', 'mean', 'added to the transaction (p50 − baseline p50)'],
    modes.map((mode) => {
      const d = txTimes.get(mode)!;
      return [mode, fmt(d.p50), fmt(d.p99), fmt(d.mean), mode === 'baseline' ? '—' : fmt(d.p50 - baselineP50)];
    }),
  ),
  '',
  'plain: the job is scheduled after COMMIT, outside the transaction (one Redis round trip, not atomic with the data).',
  'after-commit: no outbox; the job is written to Redis from memory right after COMMIT (lost if the process dies in between).',
  'outbox: one INSERT (with NOTIFY) in the transaction, then, right after COMMIT, one UPDATE claiming ' +
    "the row and the write to Redis (the row's DELETE follows in the background).",
  '',
  '## (b) Latency from COMMIT to the handler starting (ms, job due at once)',
  '',
  markdown(
    ['mode', 'p50', 'p90', 'p99', 'max'],
    [...latencies].map(([mode, d]) => [mode, fmt(d.p50), fmt(d.p90), fmt(d.p99), fmt(d.max)]),
  ),
  '',
  '## (c) Relay throughput from a backlog',
  '',
  `${PLAN.backlog} rows left behind, drained by one instance's relay (batch 500): ${(PLAN.backlog / relaySeconds).toFixed(0)} rows/s ` +
    (`over ${relaySeconds.toFixed(2)} s including the app's start (${(appStartMs / 1000).toFixed(2)} ` +
      `s, during which the relay already ran); `) +
    `${leftAfterStart[0].n} rows left once the app was up were drained at ${(leftAfterStart[0].n / drainSeconds).toFixed(0)} rows/s. ` +
    ('Each row is one schedule-script call (its own operation record, so that a row written twice is ' +
      'one job) plus the DEL of that record after the row is deleted.'),
  '',
].join('\n');
mkdirSync(RESULTS_DIR, { recursive: true });
writeFileSync(join(RESULTS_DIR, 'outbox-latest.md'), report);
console.log(report);
await pool.end();
await redis.stop();
await postgres.stop();
process.exit(0);
