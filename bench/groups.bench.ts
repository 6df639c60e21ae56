/**
 * Groups benchmark: jobs of one group run one at a time and in order across instances, other groups
 * in parallel. This library's `{ group }` against groupmq (per-group FIFO on Redis) and the BullMQ
 * workaround a user writes (a lock per group, a busy group's job put back as delayed), in one run on
 * the same Redis.
 *
 *   npm run bench:groups                  (REDIS_URL=redis://… to use a server of yours instead of a private one)
 *   BENCH_QUICK=1 npm run bench:groups    (a smoke run: 100 groups; numbers not comparable)
 *   BENCH_ONLY=groupmq,bullmq npm run bench:groups   (some contenders only: ours, groupmq, bullmq)
 *   BENCH_SCENARIOS=a npm run bench:groups           (some scenarios only)
 *
 * 1,000 groups × 20 jobs, written group by group (g0's 20 jobs, then g1's, …), all due now; 4 consumer
 * processes with concurrency 8 each; a handler waits 1 ms.
 * (a) backlog: every job is written, then the consumers start together.
 * (b) live: the consumers start, then the jobs are written while they consume.
 * Per contender: jobs/s (from the start to the last handler's end), ordering (runs that started after
 * a later job of their group, pairs of one group's runs that overlapped, jobs run twice or never),
 * fairness (when each group first started: p50/p99 across groups; Jain's index of jobs finished per
 * group at 25% and 50% of the run), and CPU per job: all consumer processes + the bench process
 * (process.cpuUsage) and the Redis server (INFO cpu), with the commands Redis ran per job.
 *
 * Writes bench/results/groups-latest.md and .json and exits.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { provideMeteredRedis } from './support/bench-redis.js';
import { environmentLine, writeResults } from './support/bench-report.js';
import { contenderTable, cpuColumns, formatNumber, type Column } from './support/contender-table.js';
import { runFleet } from './support/fleet-run.js';
import { groupContenders, GROUP_RETRY_DELAY_MS } from './support/group-contenders.js';
import { fairness, ordering, type Fairness, type Ordering } from './support/group-stats.js';
import { selectContenders, type BenchJob, type JobContender } from './support/job-contender.js';
import { cpuPerJob, UsageMeter, type CpuPerJob } from './support/usage-meter.js';

const QUICK = process.env.BENCH_QUICK === '1';
const PLAN = {
  groups: QUICK ? 100 : 1000,
  jobsPerGroup: 20,
  processes: 4,
  concurrency: 8,
  workMs: 1,
  timeoutMs: QUICK ? 60_000 : 300_000,
};
const SCENARIOS = { a: 'backlog', b: 'live' } as const;
type Scenario = keyof typeof SCENARIOS;
const ONLY_SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? 'a,b').split(',').map((s) => s.trim()));

/** CPU per job: the client side is every consumer process + the bench process. */
interface RunResult extends Partial<CpuPerJob> {
  readonly name: string;
  readonly error?: string;
  readonly jobsPerSec?: number;
  readonly enqueueMs?: number;
  readonly lastEndMs?: number;
  readonly ordering?: Ordering;
  readonly fairness?: Fairness;
  readonly runsPerProcess?: number[];
  readonly counters?: Record<string, number>;
}

function progress(message: string): void {
  process.stderr.write(`[bench:groups] ${message}\n`);
}

/** Group-major: every job of g0 in sequence, then g1's, … */
function groupJobs(): BenchJob[] {
  return Array.from({ length: PLAN.groups * PLAN.jobsPerGroup }, (_, i) => ({
    g: Math.floor(i / PLAN.jobsPerGroup),
    s: i % PLAN.jobsPerGroup,
  }));
}

async function runOne(contender: JobContender, scenario: Scenario, url: string, meter: UsageMeter): Promise<RunResult> {
  const jobs = groupJobs();
  const run = await runFleet(
    {
      bench: 'groups',
      contender,
      url,
      namespace: `bench-groups-${scenario}-${randomBytes(3).toString('hex')}`,
      processes: PLAN.processes,
      consumer: { plan: { concurrency: PLAN.concurrency }, workMs: PLAN.workMs },
      jobs,
      grouped: true,
      enqueue: scenario === 'a' ? 'before' : 'during',
      timeoutMs: PLAN.timeoutMs,
    },
    meter,
  );
  const { records } = run.fleet;
  const lastEndMs = (records.reduce((n, r) => Math.max(n, r[3]), run.goUs) - run.goUs) / 1000;
  return {
    name: contender.name,
    jobsPerSec: (jobs.length / lastEndMs) * 1000,
    enqueueMs: run.enqueueMs,
    lastEndMs,
    ordering: ordering(records, PLAN.groups, PLAN.jobsPerGroup),
    fairness: fairness(records, PLAN.groups, run.goUs),
    ...cpuPerJob(run.usage, jobs.length, run.fleet.cpuMicros),
    runsPerProcess: run.fleet.runsPerProcess,
    counters: run.fleet.counters,
  };
}

async function main(): Promise<void> {
  const bench = await provideMeteredRedis();
  const { redis, meter, version, loadAtStart } = bench;
  progress(`Redis ${version} at ${redis.url} (${redis.source}); load ${loadAtStart.map((l) => l.toFixed(2)).join(' ')}`);
  const contenders = selectContenders(groupContenders);
  const results: Partial<Record<Scenario, RunResult[]>> = {};
  try {
    for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
      if (!ONLY_SCENARIOS.has(scenario)) continue;
      const rows: RunResult[] = (results[scenario] = []);
      for (const contender of contenders) {
        progress(`(${scenario}) ${SCENARIOS[scenario]}: ${contender.name}, ${PLAN.groups} groups × ${PLAN.jobsPerGroup} jobs`);
        try {
          rows.push(await runOne(contender, scenario, redis.url, meter));
        } catch (error) {
          progress(`(${scenario}) ${contender.name} failed: ${(error as Error).message}`);
          rows.push({ name: contender.name, error: (error as Error).message });
        }
        await bench.flushIfPrivate();
      }
    }
  } finally {
    await bench.close();
  }
  const environment = environmentLine(version, loadAtStart, ['ioredis', '@nestjs/core', 'groupmq', 'bullmq'], QUICK);
  const markdown = render(results, contenders, environment.text);
  writeResults('groups', markdown, {
    date: new Date().toISOString(),
    environment: environment.text,
    versions: environment.versions,
    plan: PLAN,
    results,
  });
}

const COLUMNS: readonly Column<RunResult>[] = [
  { header: 'jobs/s', digits: 0, better: 'higher', value: (r) => r.jobsPerSec },
  { header: 'out-of-order starts', digits: 0, better: 'none', value: (r) => r.ordering?.outOfOrder },
  { header: 'overlapping pairs', digits: 0, better: 'none', value: (r) => r.ordering?.overlappingPairs },
  { header: 'groups affected', digits: 0, better: 'none', value: (r) => r.ordering?.groupsAffected },
  {
    header: 'run twice / never',
    digits: 0,
    better: 'none',
    value: (r) => (r.ordering ? r.ordering.duplicates + r.ordering.missing : undefined),
  },
  { header: 'first start p50 ms', digits: 0, better: 'lower', value: (r) => r.fairness?.firstStartMs.p50 },
  { header: 'first start p99 ms', digits: 0, better: 'lower', value: (r) => r.fairness?.firstStartMs.p99 },
  { header: 'Jain @25%', digits: 3, better: 'higher', value: (r) => r.fairness?.jainAt25 },
  { header: 'Jain @50%', digits: 3, better: 'higher', value: (r) => r.fairness?.jainAt50 },
];
const CPU_COLUMNS = cpuColumns<RunResult>({ client: 'consumers + bench CPU', total: 'total' }, 0);

function render(results: Partial<Record<Scenario, RunResult[]>>, contenders: readonly JobContender[], environment: string): string {
  const sections = (Object.keys(SCENARIOS) as Scenario[]).flatMap((scenario) => {
    const rows = results[scenario];
    if (!rows) return [];
    const ours = rows.find((r) => r.name === 'nestjs-redis-lock' && !r.error);
    const ok = rows.filter((r) => !r.error);
    const details = rows.map((r) =>
      r.error
        ? `- ${r.name}: FAILED: ${r.error}`
        : `- ${r.name}: enqueue ${formatNumber(r.enqueueMs)} ms, last handler ${formatNumber(r.lastEndMs)} ` +
          `ms after the start, runs per process ` +
          `${r.runsPerProcess?.join('/')}, first start max ${formatNumber(r.fairness?.firstStartMs.max)} ms` +
          Object.entries(r.counters ?? {})
            .map(([k, v]) => `, ${k} ${v} (${formatNumber(v / (PLAN.groups * PLAN.jobsPerGroup), 2)} per job)`)
            .join(''),
    );
    return [
      `## (${scenario}) ${SCENARIOS[scenario]}: ` +
        (scenario === 'a'
          ? 'every job written, then the consumers start'
          : 'the consumers start, then the jobs are written while they run'),
      '',
      contenderTable(ok, ours, COLUMNS),
      '',
      'CPU on both sides:',
      '',
      contenderTable(ok, ours, CPU_COLUMNS),
      '',
      ...details,
      '',
    ];
  });
  return [
    '# Groups: nestjs-redis-lock vs groupmq vs a BullMQ workaround',
    '',
    `${new Date().toISOString()} — ${environment}`,
    '',
    `${PLAN.groups} groups × ${PLAN.jobsPerGroup} jobs written group by group, all due now; ${PLAN.processes} ` +
      `consumer processes × concurrency ${PLAN.concurrency}; ` +
      `a handler waits ${PLAN.workMs} ms. Every run is timed from the moment the consumers are told to start.`,
    '',
    ...sections,
    'Reading: "out-of-order starts" = runs that started after a later job of their group had started; ' +
      '"overlapping pairs" = two runs of one group ' +
      'running at once; both should be 0. Times are CLOCK_MONOTONIC (process.hrtime), one clock for every process of the machine. ' +
      '"first start" = ms from the start to a group\'s first handler, across groups. Jain\'s index (1 = every group equally far along, ' +
      `${formatNumber(1 / PLAN.groups, 3)} = one group only) of jobs finished per group at 25% and 50% of the run's time. ` +
      ('"consumers + bench CPU" = user + system CPU of every consumer process and of the bench process ' +
        '(the producer) from the start to the last handler; ') +
      ('"Redis CPU" = the redis-server process (INFO cpu); "Redis commands" = calls in INFO commandstats, ' +
        'commands inside scripts included. ') +
      (`"ours vs X" > 1 means ours is better. The BullMQ workaround puts a job whose group is busy back ` +
        `for ${GROUP_RETRY_DELAY_MS} ms; nothing in it keeps a group's order.`),
    '',
    ...contenders.map((c) => `- ${c.name}: ${c.settings}`),
    '',
  ].join('\n');
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
