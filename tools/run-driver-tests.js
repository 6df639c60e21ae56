#!/usr/bin/env node
/**
 * `npm run test:drivers`: the core specs (locks of every kind, delayed jobs with groups, rate limit,
 * pause, repeat and cancel, the outbox, @OnOneInstance and @LeaderElection, health, lost replies,
 * a cluster) once per driver other than ioredis, which `npm test` covers: the module under each spec
 * speaks through `REDIS_LOCK_TEST_DRIVER` (test/support/test-driver.ts). `--driver NAME` (repeatable)
 * picks drivers; other arguments go to Jest. Runs on Node 24 (tools/fetch-node.js) like `npm test`.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { nodeBinary } from './fetch-node.js';

const ROOT = join(import.meta.dirname, '..');
const DRIVERS = ['iovalkey', 'node-redis', 'valkey-glide'];

/** Specs whose modules are built by the support helpers, so they follow the run's driver. */
export const DRIVER_SPECS = [
  'test/drivers/',
  'test/lock/lock-basics.spec.ts',
  'test/lock/lock-kinds.spec.ts',
  'test/lock/fair-lock.spec.ts',
  'test/lock/semaphore.spec.ts',
  'test/lock/read-write-lock.spec.ts',
  'test/lock/multi-key.spec.ts',
  'test/lock/reentrancy.spec.ts',
  'test/lock/waiting.spec.ts',
  'test/lock/watchdog.spec.ts',
  'test/lock/fences.spec.ts',
  'test/delay-queue/consumer.spec.ts',
  'test/delay-queue/schedule.spec.ts',
  'test/delay-queue/groups.spec.ts',
  'test/delay-queue/rate-limited-job.spec.ts',
  'test/delay-queue/pause-and-rate-limit.spec.ts',
  'test/delay-queue/repeat.spec.ts',
  'test/delay-queue/cancel-progress.spec.ts',
  'test/delay-queue/priorities.spec.ts',
  'test/delay-queue/dedupe.spec.ts',
  'test/delay-queue/job-logs.spec.ts',
  'test/delay-queue/wait-for-shutdown-drain.spec.ts',
  'test/delay-queue/wait-for-finished-job-timeout.spec.ts',
  'test/delay-queue/job-list.spec.ts',
  'test/delay-queue/drain-clean.spec.ts',
  'test/delay-queue/retention.spec.ts',
  'test/outbox/outbox.pglite.spec.ts',
  'test/scheduling/on-one-instance.spec.ts',
  'test/scheduling/leader-election.spec.ts',
  'test/observability/health.spec.ts',
  'test/observability/metrics.spec.ts',
  'test/observability/dashboard.spec.ts',
  'test/cluster/cluster-locks.spec.ts',
  'test/cluster/delayed-jobs.spec.ts',
  'test/lock/lost-replies.spec.ts',
  'test/delay-queue/lost-replies.spec.ts',
  'test/faults/lost-replies.spec.ts',
  'test/faults/randomized-checker.spec.ts',
];

const args = process.argv.slice(2);
const chosen = [];
const jestArgs = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--driver') chosen.push(args[++i]);
  else jestArgs.push(args[i]);
}
const unknown = chosen.filter((driver) => !DRIVERS.includes(driver));
if (unknown.length > 0) {
  console.error(`Unknown driver ${unknown.join(', ')}: expected ${DRIVERS.join(', ')}`);
  process.exit(2);
}
const [major, minor] = process.versions.node.split('.').map(Number);
const node = major > 24 || (major === 24 && minor >= 9) ? process.execPath : nodeBinary(24);
let failed = false;
for (const driver of chosen.length > 0 ? chosen : DRIVERS) {
  console.log(`\n──── driver ${driver}: ${DRIVER_SPECS.length} spec paths ────`);
  const result = spawnSync(
    node,
    [
      '--experimental-vm-modules',
      '--disable-warning=ExperimentalWarning',
      join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'),
      ...DRIVER_SPECS,
      ...jestArgs,
    ],
    { cwd: ROOT, stdio: 'inherit', env: { ...process.env, REDIS_LOCK_TEST_DRIVER: driver } },
  );
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
