/**
 * A consumer process of the group and rate-limit checkers (started, SIGKILLed and respawned by
 * worker-fleet.ts): an application with the module consuming TOPIC, recording every handler run on
 * stdout, one line each, before the code goes on (writes to a pipe are synchronous on Linux, so a
 * line is out before the process can be killed after it):
 *
 *   ready <pid>      consuming
 *   H {"e":"start", job, group, attempt, token, claimedAt, m, pid}   a handler began
 *   H {"e":"end", job, token, m, outcome, reason?}                   it returned (ok, lost) or threw (failed)
 *   unhandled <reason>   an unhandled rejection (the specs fail on any)
 *
 * `m` is CLOCK_MONOTONIC in µs (shared by every process of the machine); `claimedAt` is
 * `JobContext.claimedAt` (Redis server clock, ms). The payload says how the handler behaves:
 * `{ workMs, fail?: 'once' | 'always' }`; the work ends early when the delivery's `signal` aborts
 * (outcome `lost` when the reason is a lost visibility), as a handler that heeds it does.
 *
 * Environment: REDIS_URL, KEY_PREFIX, TOPIC, CONCURRENCY, VISIBILITY (ms), and optionally
 * GROUP_CONCURRENCY, RATE_MAX with RATE_DURATION (ms). SIGTERM: close the application, exit 0.
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
  app.get(DelayQueueService).consume<WorkerJobPayload>(
    env('TOPIC'),
    async (payload, job) => {
      const base = { job: job.id, token: job.fencingToken };
      record({ e: 'start', ...base, group: job.group, attempt: job.attempt, claimedAt: job.claimedAt.getTime(), m: monotonicUs(), pid: process.pid });
      await workUntilAborted(job.signal, payload.workMs);
      const lost = job.signal.reason instanceof JobVisibilityLostError;
      const fails = !lost && (payload.fail === 'always' || (payload.fail === 'once' && job.attempt === 1));
      const reason = job.signal.aborted ? String((job.signal.reason as Error)?.name) : undefined;
      record({ e: 'end', ...base, m: monotonicUs(), outcome: lost ? 'lost' : fails ? 'failed' : 'ok', reason });
      if (fails) throw new Error('a planned failure');
    },
    options,
  );
  closeOnSigterm(app);
  process.stdout.write(`ready ${process.pid}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error)?.stack ?? error}\n`);
  process.exit(1);
});
