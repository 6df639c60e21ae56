/**
 * A consumer process of the group and rate-limit checkers (started, SIGKILLed and respawned by
 * worker-fleet.ts): an application with the module consuming TOPIC, recording every handler run on
 * stdout, one line each, before the code goes on (writes to a pipe are synchronous on Linux, so a
 * line is out before the process can be killed after it):
 *
 *   ready <pid>      consuming
 *   H {"e":"start", job, group, attempt, token, claimedAt, m, pid, live?}   a handler began
 *   H {"e":"end", job, token, m, outcome, reason?, lastLiveM?, abortSeenM?}   it returned (ok, lost) or threw (failed)
 *   B <job id>       a handler of BURST_TOPIC ran (see below)
 *   unhandled <reason>   an unhandled rejection (the specs fail on any)
 *
 * `m` is CLOCK_MONOTONIC in µs (shared by every process of the machine); `claimedAt` is
 * `JobContext.claimedAt` (Redis server clock, ms). The payload says how the handler behaves:
 * `{ workMs, fail?: 'once' | 'always' }`; the work ends early when the delivery's `signal` aborts
 * (outcome `lost` when the reason is a lost visibility), as a handler that heeds it does.
 *
 * With SIGNAL_POLL=1 the handler does not listen for the abort: it reads `job.signal.aborted` at its
 * start and then every 20-50 ms, as a handler that checks its signal between steps of work, and
 * each read that finds the signal live stands for a step of work done (a side effect). `live` (at
 * the start), `lastLiveM` (the last read that found it live, or the end of a handler that finished
 * without seeing an abort) and `abortSeenM` (the first read that found it aborted) go in the
 * history. Each read takes the monotonic time BEFORE reading the signal, so a process stopped
 * between the two can only make a recorded step earlier than it was, never later.
 *
 * Environment: REDIS_URL, KEY_PREFIX, TOPIC, CONCURRENCY, VISIBILITY (ms), and optionally
 * GROUP_CONCURRENCY, RATE_MAX with RATE_DURATION (ms), KEEP_COMPLETED (a `keepCompleted.count`),
 * SIGNAL_POLL=1, and BURST_TOPIC with BURST_CONCURRENCY and BURST_KEEP_COMPLETED: a second consumer,
 * of BURST_TOPIC, whose handlers return at once after a line `B <job id>`.
 * SIGTERM: close the application, exit 0.
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { DelayQueueService, JobVisibilityLostError, RedisLockModule, type ConsumerOptions } from '../../../lib/index.js';
import { closeOnSigterm } from '../../../test/support/close-on-sigterm.js';
import { monotonicUs } from '../scheduled-work/constants.js';

/** What the checkers' producers put in a job's payload. */
export interface WorkerJobPayload {
  readonly workMs: number;
  readonly fail?: 'once' | 'always';
}

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};
const record = (event: Record<string, unknown>) => process.stdout.write(`H ${JSON.stringify(event)}\n`);

process.on('unhandledRejection', (reason) => {
  process.stdout.write(`unhandled ${String((reason as Error)?.stack ?? reason).replace(/\n/g, ' | ')}\n`);
});

/** Resolves after `ms`. */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What a polling handler saw of its signal (see SIGNAL_POLL above). */
interface SignalReads {
  lastLiveM?: number;
  abortSeenM?: number;
}

/** Works `ms` in steps of 20-50 ms, reading `signal` before each step; stops at the first abort it reads. */
async function workCheckingSignal(signal: AbortSignal, ms: number, reads: SignalReads): Promise<void> {
  const until = monotonicUs() + ms * 1000;
  for (;;) {
    const m = monotonicUs();
    if (signal.aborted) {
      reads.abortSeenM = m;
      return;
    }
    reads.lastLiveM = m;
    if (m >= until) return;
    await sleep(Math.min(20 + Math.floor(Math.random() * 31), Math.ceil((until - m) / 1000)));
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function workUntilAborted(signal: AbortSignal, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(
    RedisLockModule.forRoot({
      redis: env('REDIS_URL'),
      keyPrefix: env('KEY_PREFIX'),
      connectTimeout: 0, // a respawned worker may start while Redis restarts: connect when it can
      delayQueue: { maxAttempts: 1000, backoff: { delay: 50, maxDelay: 200 } },
    }),
    { logger: ['error'] },
  );
  const options: ConsumerOptions = { concurrency: Number(env('CONCURRENCY')), visibilityTimeout: Number(env('VISIBILITY')) };
  if (process.env.GROUP_CONCURRENCY) options.groupConcurrency = Number(process.env.GROUP_CONCURRENCY);
  if (process.env.RATE_MAX) options.rateLimit = { max: Number(process.env.RATE_MAX), duration: Number(env('RATE_DURATION')) };
  if (process.env.KEEP_COMPLETED) options.keepCompleted = { count: Number(process.env.KEEP_COMPLETED) };
  const polling = process.env.SIGNAL_POLL === '1';
  const queue = app.get(DelayQueueService);
  queue.consume<WorkerJobPayload>(
    env('TOPIC'),
    async (payload, job) => {
      const base = { job: job.id, token: job.fencingToken };
      const reads: SignalReads = {};
      const startM = monotonicUs();
      const live = polling ? !job.signal.aborted : undefined;
      record({
        e: 'start',
        ...base,
        group: job.group,
        attempt: job.attempt,
        claimedAt: job.claimedAt.getTime(),
        m: startM,
        pid: process.pid,
        live,
      });
      if (polling) await workCheckingSignal(job.signal, payload.workMs, reads);
      else await workUntilAborted(job.signal, payload.workMs);
      const lost = job.signal.reason instanceof JobVisibilityLostError;
      const fails = !lost && (payload.fail === 'always' || (payload.fail === 'once' && job.attempt === 1));
      const reason = job.signal.aborted ? String((job.signal.reason as Error)?.name) : undefined;
      const endM = monotonicUs();
      // A polling handler that finished without reading an abort acted until its end.
      if (polling && reads.abortSeenM === undefined) reads.lastLiveM = endM;
      record({ e: 'end', ...base, m: endM, outcome: lost ? 'lost' : fails ? 'failed' : 'ok', reason, ...reads });
      if (fails) throw new Error('a planned failure');
    },
    options,
  );
  if (process.env.BURST_TOPIC) {
    queue.consume(
      env('BURST_TOPIC'),
      (_payload, job) => {
        process.stdout.write(`B ${job.id}\n`);
        return Promise.resolve({ ok: 1 });
      },
      {
        concurrency: Number(env('BURST_CONCURRENCY')),
        keepCompleted: { count: Number(env('BURST_KEEP_COMPLETED')) },
      },
    );
  }
  closeOnSigterm(app);
  process.stdout.write(`ready ${process.pid}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error)?.stack ?? error}\n`);
  process.exit(1);
});
