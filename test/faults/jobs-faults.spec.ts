import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Test, type TestingModule } from '@nestjs/testing';
import { DelayQueueService, JobVisibilityLostError, RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { deferred, sleep, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { topicStats } from '../support/topic-stats.js';

const ROOT = join(import.meta.dirname, '..', '..');
const CONSUMER_FIXTURE = join(ROOT, 'test', 'fixtures', 'fault-job-consumer.ts');
// Consumers are killed and respawned many times: the transpile cache makes a respawn cost well under
// a second of CPU instead of ~3 s (see the file), which keeps the spec fast on a loaded CI machine.
const TYPESCRIPT_LOADER = join(ROOT, 'tools', 'typescript-loader', 'register.js');

/** One handling reported by a consumer: which job, which delivery, which process. */
interface Handling {
  readonly id: string;
  readonly attempt: number;
  readonly pid: number;
}

/**
 * What happened to every job, from the consumers' own reports (independent of Redis, which some of
 * these tests restart): scheduled, handled (a `done` line), handled more than once, never handled.
 */
class JobLedger {
  readonly scheduledAt = new Map<string, number>();
  readonly starts: Handling[] = [];
  readonly dones: Handling[] = [];
  readonly killedPids = new Set<number>();
  readonly unhandled: string[] = [];

  scheduled(id: string): void {
    if (!this.scheduledAt.has(id)) this.scheduledAt.set(id, performance.now());
  }

  record(line: string): void {
    const [kind, id, attempt, pid] = line.split(' ');
    if (kind === 'start') this.starts.push({ id, attempt: Number(attempt), pid: Number(pid) });
    else if (kind === 'done') this.dones.push({ id, attempt: Number(attempt), pid: Number(pid) });
    else if (kind === 'unhandled') this.unhandled.push(line);
  }

  handledIds(): Set<string> {
    return new Set(this.dones.map((d) => d.id));
  }

  lost(): string[] {
    const handled = this.handledIds();
    return [...this.scheduledAt.keys()].filter((id) => !handled.has(id));
  }

  /** Jobs handled more than once, with every handling. */
  duplicated(): Map<string, Handling[]> {
    const byId = new Map<string, Handling[]>();
    for (const done of this.dones) byId.set(done.id, [...(byId.get(done.id) ?? []), done]);
    return new Map([...byId].filter(([, dones]) => dones.length > 1));
  }

  counts(extra: Record<string, number> = {}): Record<string, number> {
    const duplicated = this.duplicated();
    return {
      scheduled: this.scheduledAt.size,
      handled: this.handledIds().size,
      handledTwiceOrMore: duplicated.size,
      extraHandlings: [...duplicated.values()].reduce((n, dones) => n + dones.length - 1, 0),
      lost: this.lost().length,
      redeliveries: this.starts.filter((s) => s.attempt > 1).length,
      ...extra,
    };
  }
}

/** A consumer fixture process feeding `ledger`. */
class ChildConsumer {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
  isReady = false;
  /** SIGKILL sent by the spec: the process is gone or about to be, whatever `alive` says yet. */
  private killed = false;
  private stderr = '';

  constructor(env: Record<string, string>, ledger: JobLedger) {
    this.child = spawn(process.execPath, ['--enable-source-maps', '--import', TYPESCRIPT_LOADER, CONSUMER_FIXTURE], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.ready = new Promise((resolve, reject) => {
      createInterface({ input: this.child.stdout! }).on('line', (line) => {
        if (line.startsWith('ready ')) {
          this.isReady = true;
          resolve();
        }
        ledger.record(line);
      });
      this.child.once('exit', (code, signal) => reject(new Error(`consumer exited (${code ?? signal}) before ready:\n${this.stderr}`)));
    });
    this.ready.catch(() => undefined); // awaited by the tests; a kill before ready is not an error
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  kill(ledger: JobLedger): void {
    ledger.killedPids.add(this.pid);
    this.killed = true;
    this.child.kill('SIGKILL');
  }

  /** Graceful stop (SIGTERM: drain, hand back, close); resolves with the exit code. */
  async stop(): Promise<number | null> {
    await this.ready.catch(() => undefined); // SIGTERM is handled once the app is up
    // A consumer killed just before the end of the run may not have reported its exit yet.
    if (this.killed) return this.exited;
    if (!this.alive) return this.child.exitCode;
    this.child.kill('SIGTERM');
    // The drain is bounded by the consumer's shutdownTimeout (10 s) plus closing; on a machine loaded
    // by the rest of the suite and more, 15 s was once not enough. A hang still fails, at 30 s.
    let forced = false;
    const timer = setTimeout(() => {
      forced = true;
      this.child.kill('SIGKILL');
    }, 30_000);
    const code = await this.exited;
    clearTimeout(timer);
    if (code !== 0) {
      const how = forced ? 'did not exit within 30 s of SIGTERM (killed)' : `exited with ${code ?? this.child.signalCode} on SIGTERM`;
      throw new Error(`consumer ${this.pid} ${how}:\n${this.stderr}`);
    }
    return code;
  }
}

/** Where the run's Redis listens, for a FaultProxy in front of it. */
const redisTarget = () => ({ host: new URL(testRedisUrl()).hostname, port: Number(new URL(testRedisUrl()).port) });

/**
 * Runs `body` with two delayed-queue apps on one fresh key prefix: `cutOffApp` reaches Redis through
 * `proxy` (for the test to cut), `healthyApp` directly. Afterwards the proxy is healed and everything closed.
 */
async function withCutOffAndHealthyApps(
  label: string,
  body: (apps: { proxy: FaultProxy; cutOffApp: TestingModule; healthyApp: TestingModule }) => Promise<void>,
): Promise<void> {
  const keyPrefix = uniquePrefix(label);
  const proxy = await FaultProxy.start(redisTarget());
  const cutOffApp = await queueApp(proxy.url, keyPrefix);
  const healthyApp = await queueApp(testRedisUrl(), keyPrefix);
  try {
    await body({ proxy, cutOffApp, healthyApp });
  } finally {
    proxy.resetAll();
    proxy.heal();
    await cutOffApp.close();
    await healthyApp.close();
    await proxy.stop();
  }
}

/** A handler's long work: ends when `signal` aborts, or after `ms`. */
function workUntilAborted(signal: AbortSignal, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function queueApp(redis: RedisLockModuleOptions['redis'], keyPrefix: string): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedisLockModule.forRoot({
        redis,
        keyPrefix,
        delayQueue: { maxAttempts: 1000, backoff: { delay: 100, maxDelay: 1000 } },
      }),
    ],
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return moduleRef;
}

/** Schedules one job with a fixed id, retrying while Redis is away (same id: never stored twice). */
async function scheduleSurely(queue: DelayQueueService, topic: string, id: string, delay: number, onRetry: () => void): Promise<void> {
  for (;;) {
    try {
      await queue.schedule(topic, { id }, { id, delay });
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== 'REDIS_CONNECTION') throw error;
      onRetry();
      await sleep(100);
    }
  }
}

function report(title: string, counts: Record<string, number>): void {
  process.stdout.write(`\n[jobs-faults] ${title}: ${JSON.stringify(counts)}\n`);
}

failOnUnhandledRejections({ after: 'each' });

describe('delayed-job faults', () => {
  const children: ChildConsumer[] = [];

  function startConsumer(env: Record<string, string>, ledger: JobLedger): ChildConsumer {
    const consumer = new ChildConsumer(env, ledger);
    children.push(consumer);
    return consumer;
  }

  afterAll(() => {
    for (const c of children) if (c.alive) c.child.kill('SIGKILL');
  });

  it(
    'loses no job over rounds of consumers killed with SIGKILL at random points, and duplicates only ' +
      'jobs a killed consumer had handled',
    async () => {
      const JOBS = 200;
      const CONCURRENCY = 4;
      const KILLS = 10;
      const keyPrefix = uniquePrefix('jk');
      const topic = 'kill';
      const ledger = new JobLedger();
      const env = {
        REDIS_URL: testRedisUrl(),
        KEY_PREFIX: keyPrefix,
        TOPIC: topic,
        CONCURRENCY: String(CONCURRENCY),
        // Long enough that a live consumer stalled by a loaded machine keeps its jobs (no duplicate
        // without a death), short enough that a killed consumer's jobs come back quickly.
        VISIBILITY: '2500',
        WORK_MIN: '20',
        WORK_MAX: '100',
        WORK_AFTER: '60',
      };
      const producer = await queueApp(testRedisUrl(), keyPrefix);
      const queue = producer.get(DelayQueueService);
      try {
        const consumers = [1, 2, 3].map(() => startConsumer(env, ledger));
        await Promise.all(consumers.map((c) => c.ready));

        // Due over ~8 s, so jobs keep arriving while consumers die and come back.
        const ids = await queue.scheduleMany(
          topic,
          Array.from({ length: JOBS }, (_, i) => ({ payload: i, id: `job-${i}`, delay: i * 40 })),
        );
        ids.forEach((id) => ledger.scheduled(id));

        // At least MIN_KILLS kills, however slowly a loaded machine starts the replacements: the
        // loop waits for one to be ready rather than giving up when its time is over.
        const MIN_KILLS = 3;
        let kills = 0;
        const killUntil = performance.now() + 15_000;
        while (kills < KILLS && (kills < MIN_KILLS || performance.now() < killUntil)) {
          await sleep(250 + Math.random() * 400);
          const live = consumers.filter((c) => c.alive && c.isReady);
          if (live.length <= 1) {
            // Keep one running while the replacements start.
            const starting = consumers.filter((c) => c.alive && !c.isReady);
            if (starting.length === 0) consumers.push(startConsumer(env, ledger)); // a replacement died before ready
            await Promise.race(consumers.filter((c) => c.alive && !c.isReady).map((c) => c.ready.catch(() => undefined)));
            continue;
          }
          live[Math.floor(Math.random() * live.length)].kill(ledger);
          kills++;
          consumers.push(startConsumer(env, ledger));
        }

        await waitFor(() => ledger.lost().length === 0, 45_000, `every job to be handled (lost so far: ${ledger.lost().length})`);
        await waitFor(
          async () =>
            JSON.stringify(await queue.stats(topic)) ===
            JSON.stringify({
              scheduled: 0,
              due: 0,
              active: 0,
              dead: 0,
              schedules: 0,
              paused: false,
              grouped: 0,
              busyGroups: 0,
              readyGroups: 0,
            }),
          15_000,
          'the queue to be empty',
        );
        await Promise.all(consumers.map((c) => c.stop()));

        const duplicated = ledger.duplicated();
        const counts = ledger.counts({ kills, concurrency: CONCURRENCY });
        report('consumers killed with SIGKILL', counts);
        expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
        expect(counts.lost).toBe(0);
        // Only a consumer that died between a handler's side effect and its acknowledgement causes a
        // second handling, and a consumer has at most `concurrency` handlers running.
        expect(counts.extraHandlings).toBeLessThanOrEqual(kills * CONCURRENCY);
        for (const [id, dones] of duplicated) {
          expect({ id, handledByAKilledConsumer: dones.some((d) => ledger.killedPids.has(d.pid)) }).toEqual({
            id,
            handledByAKilledConsumer: true,
          });
        }
        expect(ledger.unhandled).toEqual([]);
      } finally {
        await producer.close();
      }
    },
    120_000,
  );

  describe('Redis restarted under load (append-only file, fsync every second)', () => {
    let server: LocalRedisServer;
    beforeAll(async () => {
      server = await startLocalRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'everysec'] });
    });
    afterAll(() => server.stop());

    /**
     * Two consumer processes, a producer scheduling JOBS jobs at ~60/s in this process, and
     * `restart()` called at the given times. Returns the ledger and when each restart began.
     */
    async function underLoad(topic: string, restartAt: number[], restart: () => Promise<void>) {
      const JOBS = 300;
      const keyPrefix = uniquePrefix('jr');
      const ledger = new JobLedger();
      const env = {
        REDIS_URL: server.url,
        KEY_PREFIX: keyPrefix,
        TOPIC: topic,
        CONCURRENCY: '4',
        VISIBILITY: '5000',
        WORK_MIN: '10',
        WORK_MAX: '60',
      };
      const consumers = [1, 2].map(() => startConsumer(env, ledger));
      const producer = await queueApp(server.url, keyPrefix);
      const queue = producer.get(DelayQueueService);
      const restartedAt: number[] = [];
      let scheduleRetries = 0;
      try {
        await Promise.all(consumers.map((c) => c.ready));
        const started = performance.now();
        const restarts = (async () => {
          for (const at of restartAt) {
            await sleep(Math.max(0, started + at - performance.now()));
            restartedAt.push(performance.now());
            await restart();
          }
        })();
        for (let i = 0; i < JOBS; i++) {
          const id = `job-${i}`;
          await scheduleSurely(queue, topic, id, Math.floor(Math.random() * 500), () => scheduleRetries++);
          ledger.scheduled(id);
          await sleep(16);
        }
        await restarts;
        await waitFor(() => ledger.lost().length === 0, 30_000, 'every job to be handled').catch(() => undefined);
        // Settle: whatever is left in Redis must be nothing but jobs already counted.
        await waitFor(
          async () => {
            const s = await queue.stats(topic).catch(() => undefined);
            return s !== undefined && s.due + s.scheduled + s.active === 0;
          },
          20_000,
          'the queue to be empty',
        );
        const stats = await queue.stats(topic);
        await Promise.all(consumers.map((c) => c.stop()));
        return { ledger, restartedAt, scheduleRetries, dead: stats.dead };
      } finally {
        await producer.close();
      }
    }

    it('loses no job when Redis is restarted gracefully (SIGTERM: it fsyncs the AOF) twice under load', async () => {
      const { ledger, scheduleRetries, dead } = await underLoad('graceful', [1_200, 3_200], () =>
        server.restart({ signal: 'SIGTERM', downtimeMs: 500 }),
      );
      const counts = ledger.counts({ restarts: 2, scheduleRetries, dead });
      report('Redis restarted with SIGTERM (AOF everysec)', counts);
      expect(counts.lost).toBe(0);
      expect(dead).toBe(0);
      // A handler running across a restart whose acknowledgement could not land runs again: at most
      // the handlers running at each restart (2 consumers x concurrency 4).
      expect(counts.extraHandlings).toBeLessThanOrEqual(2 * 2 * 4);
      expect(ledger.unhandled).toEqual([]);
    });

    it('after a hard kill (SIGKILL) of Redis, loses at most the writes of the last fsync window, and reports them', async () => {
      const { ledger, restartedAt, scheduleRetries, dead } = await underLoad('hard', [2_000], () =>
        server.restart({ signal: 'SIGKILL', downtimeMs: 500 }),
      );
      const lost = ledger.lost();
      const killedAt = restartedAt[0];
      // appendfsync everysec: the kernel holds what Redis wrote but did not fsync yet. A killed
      // redis-server on a live machine loses nothing of it; only writes Redis had not handed to the
      // kernel yet (it may postpone them up to 2 s while an fsync is slow), or an OS crash, lose data.
      const lostOutsideWindow = lost.filter((id) => killedAt - ledger.scheduledAt.get(id)! > 2_000);
      const counts = ledger.counts({ restarts: 1, scheduleRetries, dead });
      report('Redis killed with SIGKILL (AOF everysec)', counts);
      expect(lostOutsideWindow).toEqual([]);
      expect(dead).toBe(0);
      expect(ledger.unhandled).toEqual([]);
    });
  });

  describe('network black-holed between a consumer and Redis', () => {
    async function blackholedWait(recover: (proxy: FaultProxy) => void) {
      const keyPrefix = uniquePrefix('jb');
      const proxy = await FaultProxy.start(redisTarget());
      const consumerApp = await queueApp(proxy.url, keyPrefix);
      const producer = await queueApp(testRedisUrl(), keyPrefix);
      const handled: string[] = [];
      const parked = proxy.observe((args) => args[0].toLowerCase() === 'bzpopmin');
      try {
        const consumer = consumerApp.get(DelayQueueService).consume(
          'bh',
          (_payload, job) => {
            handled.push(job.id);
          },
          // A short idle wait, so the hang detector gives up on the black-holed BZPOPMIN during the cut.
          { maxIdleWait: 1_000 },
        );
        await waitFor(() => parked.count >= 1, 10_000, 'the consumer to park on BZPOPMIN');
        parked.stop();
        proxy.blackhole();
        const ids = await producer.get(DelayQueueService).scheduleMany(
          'bh',
          Array.from({ length: 20 }, (_, i) => ({ payload: i, delay: 200 + i * 10 })),
        );
        await sleep(3_500);
        expect(handled).toEqual([]); // nothing can reach the consumer
        const healedAt = performance.now();
        recover(proxy);
        await waitFor(() => handled.length >= ids.length, 10_000, 'the jobs to run after the network healed');
        const after = performance.now() - healedAt;
        await waitFor(async () => (await producer.get(DelayQueueService).stats('bh')).active === 0, 10_000, 'acknowledgements');
        await sleep(200);
        expect([...handled].sort()).toEqual([...ids].sort()); // each exactly once
        expect(await producer.get(DelayQueueService).stats('bh')).toEqual(topicStats());
        // The consumer replaced its hung connection but did not storm the server with reconnects.
        expect(proxy.accepted).toBeLessThan(20);
        await consumer.close();
        return { after, accepted: proxy.accepted };
      } finally {
        await consumerApp.close();
        await producer.close();
        await proxy.stop();
      }
    }

    it('runs the jobs that fell due during the cut promptly once it heals (held bytes delivered)', async () => {
      const { after, accepted } = await blackholedWait((proxy) => proxy.heal());
      report('black-holed wait, healed', { msFromHealToAllHandled: Math.round(after), connectionsAccepted: accepted });
      expect(after).toBeLessThan(6_000);
    });

    it('runs them promptly when the cut outlasted TCP (connections reset, then the network returns)', async () => {
      const { after, accepted } = await blackholedWait((proxy) => {
        proxy.resetAll();
        proxy.heal();
      });
      report('black-holed wait, reset', { msFromHealToAllHandled: Math.round(after), connectionsAccepted: accepted });
      expect(after).toBeLessThan(6_000);
    });

    it("aborts a cut-off handler's job.signal before another consumer can start the job", () =>
      withCutOffAndHealthyApps('jm', async ({ proxy, cutOffApp, healthyApp }) => {
        let startedOnCutOff = false;
        let abortedAt = Number.POSITIVE_INFINITY;
        let abortReason: unknown;
        const cutOffDone = deferred();
        const cutOff = cutOffApp.get(DelayQueueService).consume(
          'mid',
          async (_payload, job) => {
            startedOnCutOff = true;
            job.signal.addEventListener('abort', () => {
              abortedAt = performance.now();
              abortReason = job.signal.reason;
            });
            await workUntilAborted(job.signal, 15_000);
            cutOffDone.resolve();
          },
          { visibilityTimeout: 1_500 },
        );
        const id = await healthyApp.get(DelayQueueService).schedule('mid', 'work');
        await waitFor(() => startedOnCutOff, 5_000, 'the cut-off consumer to start the job');
        await sleep(200);
        proxy.blackhole();

        let startedOnHealthyAt = Number.POSITIVE_INFINITY;
        const takenOver: Array<{ id: string; attempt: number }> = [];
        const healthy = healthyApp.get(DelayQueueService).consume(
          'mid',
          (_payload, job) => {
            startedOnHealthyAt = Math.min(startedOnHealthyAt, performance.now());
            takenOver.push({ id: job.id, attempt: job.attempt });
          },
          { visibilityTimeout: 1_500 },
        );
        await waitFor(() => startedOnHealthyAt < Number.POSITIVE_INFINITY, 10_000, 'the healthy consumer to take the job over');
        await cutOffDone.promise;
        expect(takenOver).toEqual([{ id, attempt: 2 }]);
        expect(abortReason).toBeInstanceOf(JobVisibilityLostError);
        expect((abortReason as JobVisibilityLostError).reason).toBe('unconfirmed');
        report('partitioned mid-job', { msAbortBeforeTakeover: Math.round(startedOnHealthyAt - abortedAt) });
        expect(abortedAt).toBeLessThanOrEqual(startedOnHealthyAt);

        proxy.resetAll();
        proxy.heal();
        await waitFor(
          async () =>
            JSON.stringify(await healthyApp.get(DelayQueueService).stats('mid')) ===
            JSON.stringify({
              scheduled: 0,
              due: 0,
              active: 0,
              dead: 0,
              schedules: 0,
              paused: false,
              grouped: 0,
              busyGroups: 0,
              readyGroups: 0,
            }),
          10_000,
          'the job to be acknowledged once',
        );
        await cutOff.close();
        await healthy.close();
      }));

    it('shuts a consumer down within its shutdown timeout (plus a bounded grace) while Redis is black-holed, losing no job', () =>
      withCutOffAndHealthyApps('js', async ({ proxy, cutOffApp, healthyApp }) => {
        let startedOnCutOff = 0;
        cutOffApp.get(DelayQueueService).consume(
          'sd',
          async (_payload, job) => {
            startedOnCutOff++;
            // Long work that stops when told to (visibility lost, or shutdown gave up waiting).
            await workUntilAborted(job.signal, 30_000);
          },
          { concurrency: 2, visibilityTimeout: 1_500, shutdownTimeout: 1_000 },
        );
        const ids = await healthyApp.get(DelayQueueService).scheduleMany(
          'sd',
          Array.from({ length: 5 }, (_, i) => ({ payload: i })),
        );
        await waitFor(() => startedOnCutOff === 2, 5_000, 'two handlers to run (and two more jobs to be buffered)');
        proxy.blackhole();
        await sleep(300);

        const closingAt = performance.now();
        await cutOffApp.close(); // before the fix: hung forever on the hand-back no reply would ever come to
        const closeMs = performance.now() - closingAt;
        report('shutdown while black-holed', { closeMs: Math.round(closeMs), shutdownTimeout: 1_000 });
        expect(closeMs).toBeLessThan(10_000);

        // What the cut-off consumer held comes back when its visibility passes, and runs elsewhere.
        const handled: string[] = [];
        healthyApp.get(DelayQueueService).consume('sd', (_payload, job) => {
          handled.push(job.id);
        });
        await waitFor(() => handled.length >= ids.length, 15_000, 'every job to run on the healthy consumer');
        expect([...handled].sort()).toEqual([...ids].sort());
      }));
  });
});
