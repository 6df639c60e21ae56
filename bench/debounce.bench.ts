/**
 * Debounce benchmark: many schedule calls on few keys from several instances, each key's job run once
 * after its quiet period with its last payload. This library's
 * `schedule(topic, payload, { dedupe: { key, ttl, mode: 'debounce' } })` against BullMQ's debounce mode
 * (`add(name, data, { delay: ttl, deduplication: { id: key, ttl, extend: true, replace: true } })`, as
 * its docs describe it), in one run on the same private Redis.
 *
 *   npm run bench:debounce                 (REDIS_URL=redis://… to use a server of yours instead of a private one)
 *   BENCH_QUICK=1 npm run bench:debounce   (a smoke run: 1 s of calls; numbers not comparable)
 *
 * 3 producer instances IN ONE PROCESS (each its own Nest application context / BullMQ Queue, so its
 * own connection), 100 keys, 10,000 calls a second in all for `burstMs`: every 10 ms each key gets one
 * call, from the instances in turn, sent without waiting for earlier replies (a key's calls are 10 ms
 * apart, far inside its ttl of 500 ms, so its quiet period starts only after the burst). Then each key
 * gets one last call, sent once every burst call was answered, carrying `final`: the run must carry it.
 * One consumer (instance 0 / a Worker, concurrency 16) counts runs per key, and keeps counting for
 * 2 × ttl after every key's final payload ran (or `timeoutMs`), so a second run of a key shows.
 *
 * Checked: one run per key per quiet period, the last with its final payload. A quiet period is
 * normally the one after the burst; on a machine too loaded to keep the rate, a key's calls can reach
 * Redis more than ttl apart mid-burst, which rightly runs the job: each key's run count must lie
 * between the quiet periods its calls' send and reply instants prove and those they allow. Reported: calls sent and achieved rate,
 * CPU per call from the burst's start to the last final call's reply (this process: the three producers
 * and the idle consumer, `process.cpuUsage`; the Redis server, `INFO cpu`), and ours ÷ BullMQ.
 *
 * Writes bench/results/debounce-latest.md and .json and exits.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { Queue, Worker } from 'bullmq';
import { NestFactory } from '@nestjs/core';
import { DelayQueueService, RedisLockModule, type Consumer } from '../lib/index.js';
import { provideBenchRedis, redisServerVersion } from './support/bench-redis.js';
import { environmentLine, writeResults } from './support/bench-report.js';
import { bullmqConnection } from './support/bullmq-producer.js';
import { UsageMeter, type Usage } from './support/usage-meter.js';

const QUICK = process.env.BENCH_QUICK === '1';
const PLAN = {
  instances: 3,
  keys: 100,
  callsPerSecond: 10_000,
  burstMs: QUICK ? 1_000 : 5_000,
  ttl: 500,
  tickMs: 10,
  consumerConcurrency: 16,
  timeoutMs: 60_000,
};

interface Payload {
  readonly key: string;
  readonly seq: number;
  readonly final?: true;
}

/** One contender: instances that schedule a debounced call, and a consumer that reports runs. */
interface Contender {
  readonly name: string;
  readonly settings: string;
  open(
    url: string,
    namespace: string,
    onRun: (payload: Payload) => void,
  ): Promise<{
    call(instance: number, payload: Payload): Promise<unknown>;
    close(): Promise<void>;
  }>;
}

const TOPIC = 'debounced';

const ours: Contender = {
  name: 'nestjs-redis-lock',
  settings: "schedule(topic, payload, { dedupe: { key, ttl, mode: 'debounce' } }); consume with { concurrency: 16 }; other options default",
  async open(url, keyPrefix, onRun) {
    const apps = await Promise.all(
      Array.from({ length: PLAN.instances }, () =>
        NestFactory.createApplicationContext(RedisLockModule.forRoot({ redis: url, keyPrefix }), { logger: ['error'] }),
      ),
    );
    const queues = apps.map((app) => app.get(DelayQueueService));
    const consumer: Consumer = queues[0].consume<Payload>(TOPIC, (payload) => onRun(payload), { concurrency: PLAN.consumerConcurrency });
    return {
      call: (instance, payload) =>
        queues[instance].schedule(TOPIC, payload, { dedupe: { key: payload.key, ttl: PLAN.ttl, mode: 'debounce' } }),
      async close() {
        await consumer.close();
        await Promise.all(apps.map((app) => app.close()));
      },
    };
  },
};

const bullmq: Contender = {
  name: 'bullmq',
  settings:
    'Queue.add(name, data, { delay: ttl, deduplication: { id: key, ttl, extend: true, replace: true }, ' +
    "removeOnComplete: true }) (BullMQ's " +
    'debounce mode); Worker concurrency 16; other options default',
  async open(url, namespace, onRun) {
    const queues = Array.from({ length: PLAN.instances }, () => new Queue<Payload>(namespace, { connection: bullmqConnection(url) }));
    await Promise.all(queues.map((queue) => queue.waitUntilReady()));
    const worker = new Worker<Payload>(namespace, async (job) => onRun(job.data), {
      connection: bullmqConnection(url),
      concurrency: PLAN.consumerConcurrency,
      removeOnComplete: { count: 0 },
    });
    await worker.waitUntilReady();
    return {
      call: (instance, payload) =>
        queues[instance].add('j', payload, {
          delay: PLAN.ttl,
          deduplication: { id: payload.key, ttl: PLAN.ttl, extend: true, replace: true },
          removeOnComplete: true,
        }),
      async close() {
        await worker.close();
        await queues[0].obliterate({ force: true }).catch(() => undefined);
        await Promise.all(queues.map((queue) => queue.close()));
      },
    };
  },
};

interface RunResult {
  readonly name: string;
  readonly error?: string;
  readonly calls: number;
  readonly callsPerSec: number;
  readonly runs: number;
  /**
   * Keys whose runs were not one per quiet period, the last carrying the final payload: runs outside
   * [certain quiet periods, possible quiet periods] (`quietPeriods`), or a last run without it.
   */
  readonly wrongKeys: string[];
  /** Keys whose run count was outside their quiet periods' bounds, and keys whose last run did not carry the final payload. */
  readonly wrongCount: number;
  readonly notFinal: number;
  /** Keys that may have had more than one quiet period (the client or Redis fell behind: calls maybe over ttl apart). */
  readonly keysWithSeveralPeriods: number;
  readonly usage: Usage;
  readonly clientMicrosPerCall: number;
  readonly redisMicrosPerCall: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Per key, how many quiet periods (a time over ttl in which Redis ran none of its calls, each ending
 * one debounced run) its calls had, from their send and reply instants: `certain` counts the gaps
 * between a call's send and every earlier call's reply over ttl (Redis ran them that far apart),
 * `possible` those between a call's reply and the previous call's send (they may have run that far
 * apart); each plus the last period, after the final call.
 */
function quietPeriods(calls: ReadonlyArray<{ key: string; sentAt: number; repliedAt: number }>) {
  const byKey = new Map<string, Array<{ sentAt: number; repliedAt: number }>>();
  for (const call of calls) byKey.set(call.key, [...(byKey.get(call.key) ?? []), call]);
  const out = new Map<string, { certain: number; possible: number }>();
  for (const [key, list] of byKey) {
    list.sort((a, b) => a.sentAt - b.sentAt);
    let certain = 1;
    let possible = 1;
    let latestReply = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < list.length; i++) {
      if (i > 0 && list[i].sentAt - latestReply > PLAN.ttl) certain++;
      if (i > 0 && list[i].repliedAt - list[i - 1].sentAt > PLAN.ttl) possible++;
      latestReply = Math.max(latestReply, list[i].repliedAt);
    }
    out.set(key, { certain, possible });
  }
  return out;
}

async function runOne(contender: Contender, url: string, meter: UsageMeter): Promise<RunResult> {
  const keys = Array.from({ length: PLAN.keys }, (_, i) => `key-${i}`);
  const runs = new Map<string, Payload[]>();
  let runCount = 0;
  let finalRuns = 0;
  let lastFinal: (() => void) | undefined;
  const allRan = new Promise<void>((resolve) => (lastFinal = resolve));
  const opened = await contender.open(url, `deb-${randomBytes(4).toString('hex')}`, (payload) => {
    runs.set(payload.key, [...(runs.get(payload.key) ?? []), payload]);
    runCount++;
    if (payload.final && ++finalRuns === PLAN.keys) lastFinal?.();
  });
  const stop = await meter.start();
  const started = performance.now();
  const inFlight: Array<Promise<unknown>> = [];
  /** Each call's key, send and reply instants (performance.now(): Redis ran it in between). */
  const sent: Array<{ key: string; sentAt: number; repliedAt: number }> = [];
  const timed = (instance: number, payload: Payload) => {
    const call = { key: payload.key, sentAt: performance.now(), repliedAt: Number.POSITIVE_INFINITY };
    sent.push(call);
    return opened.call(instance, payload).then(() => (call.repliedAt = performance.now()));
  };
  let seq = 0;
  let instance = 0;
  const callsPerTick = (PLAN.callsPerSecond * PLAN.tickMs) / 1000;
  let tick = 0;
  while (performance.now() - started < PLAN.burstMs) {
    // Every tick due by now sends its calls (a late timer catches up), then wait for the next tick.
    const due = Math.floor((performance.now() - started) / PLAN.tickMs) + 1;
    for (; tick < due; tick++) {
      for (let i = 0; i < callsPerTick; i++) {
        inFlight.push(timed(instance, { key: keys[i % keys.length], seq: seq++ }));
        instance = (instance + 1) % PLAN.instances;
      }
    }
    await sleep(Math.max(0, started + tick * PLAN.tickMs - performance.now()));
  }
  await Promise.all(inFlight);
  const burstCalls = seq;
  const elapsedMs = performance.now() - started;
  await Promise.all(keys.map((key, i) => timed(i % PLAN.instances, { key, seq: seq++, final: true })));
  const usage = await stop();
  const calls = seq;
  let error: string | undefined;
  const timeout = sleep(PLAN.timeoutMs).then(() => 'timeout' as const);
  if ((await Promise.race([allRan.then(() => 'ran' as const), timeout])) === 'timeout')
    error = `${finalRuns} keys ran their final call within ${PLAN.timeoutMs} ms`;
  // A second run of a key would come within its ttl of the first: wait two.
  await sleep(2 * PLAN.ttl);
  await opened.close();
  const seenOf = (key: string) => runs.get(key) ?? [];
  const periods = quietPeriods(sent);
  const countWrong = (key: string) => {
    const { certain, possible } = periods.get(key)!;
    return seenOf(key).length < certain || seenOf(key).length > possible;
  };
  const lastNotFinal = (key: string) => seenOf(key).at(-1)?.final !== true;
  const wrongKeys = keys.filter((key) => countWrong(key) || lastNotFinal(key));
  return {
    name: contender.name,
    error,
    wrongCount: keys.filter(countWrong).length,
    notFinal: keys.filter(lastNotFinal).length,
    keysWithSeveralPeriods: keys.filter((key) => periods.get(key)!.possible > 1).length,
    calls,
    callsPerSec: (burstCalls / elapsedMs) * 1000,
    runs: runCount,
    wrongKeys,
    usage,
    clientMicrosPerCall: usage.clientCpuMicros / calls,
    redisMicrosPerCall: usage.redisCpuMicros / calls,
  };
}

async function main(): Promise<void> {
  const loadAtStart = loadavg();
  const redis = await provideBenchRedis();
  const admin = new Redis(redis.url);
  try {
    const meter = new UsageMeter(admin);
    const results: RunResult[] = [];
    for (const contender of [ours, bullmq]) {
      process.stderr.write(`${contender.name}…\n`);
      results.push(await runOne(contender, redis.url, meter));
    }
    const env = environmentLine(await redisServerVersion(admin), loadAtStart, ['bullmq', 'ioredis'], QUICK);
    const [a, b] = results;
    const ratio = (x: number, y: number) => (y > 0 ? (x / y).toFixed(2) : '–');
    const lines = [
      '# Debounce: 10,000 calls a second on 100 keys from 3 instances',
      '',
      env.text,
      '',
      `Plan: ${JSON.stringify(PLAN)}. The 3 instances run in one process (each its own connection).`,
      '',
      '| contender | calls | calls/s achieved | runs | keys whose calls may have paused over ttl mid-burst | ' +
        'keys not run once per quiet period with the last payload (run count wrong / last run without it) | ' +
        'client CPU µs/call | Redis CPU µs/call |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...results.map(
        (r) =>
          `| ${r.name}${r.error ? ` (${r.error})` : ''} | ${r.calls} | ${r.callsPerSec.toFixed(0)} | ${r.runs} | ` +
          `${r.keysWithSeveralPeriods} | ${r.wrongKeys.length} (${r.wrongCount} / ${r.notFinal}) | ` +
          `${r.clientMicrosPerCall.toFixed(1)} | ${r.redisMicrosPerCall.toFixed(1)} |`,
      ),
      '',
      `Ours ÷ BullMQ: client CPU per call ${ratio(a.clientMicrosPerCall, b.clientMicrosPerCall)}, ` +
        `Redis CPU per call ${ratio(a.redisMicrosPerCall, b.redisMicrosPerCall)}, ` +
        `both ${ratio(a.clientMicrosPerCall + a.redisMicrosPerCall, b.clientMicrosPerCall + b.redisMicrosPerCall)}.`,
      '',
      ...results.map((r) => `- ${r.name}: ${[ours, bullmq].find((c) => c.name === r.name)?.settings}`),
    ];
    writeResults('debounce', lines.join('\n'), { plan: PLAN, environment: env, results });
    // A peer's wrong runs are a finding to report (the table shows them), not a failure of this bench;
    // ours failing its check is.
    const mine = results.find((r) => r.name === ours.name);
    if (!mine || mine.error || mine.wrongKeys.length > 0) process.exitCode = 1;
  } finally {
    admin.disconnect();
    await redis.stop();
  }
}

await main();
