import type { Redis } from 'ioredis';
import type { Consumer, ConsumerOptions, DelayedJobHandler, JobContext } from '../../lib/index.js';
import { RedisConnection } from '../../lib/core/connection/redis-connection.js';
import { ackJobsScript } from '../../lib/delay-queue/scripts/ack-jobs.lua.js';
import { claimDueJobsScript } from '../../lib/delay-queue/scripts/claim-due-jobs.lua.js';
import { deferred } from '../support/timing.js';
import { waitFor } from '../support/timing.js';
import { watchSocketWrites } from '../support/socket-writes.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';

failOnUnhandledRejections({ after: 'each' });

/**
 * With a backlog of due jobs and short handlers, a consumer sends its next claim before the jobs of
 * the last one run (ClaimLoop.claimAhead), so Redis runs the claim while this process runs the
 * handlers. Watched on a real Redis at the module connection: each claim call, whether its bytes
 * have reached the socket, and its reply; every handler start records whether a claim was then on
 * the wire without its reply yet. Without claiming ahead that never happens with synchronous
 * handlers (the next claim waits for a free slot, after the batch ran).
 */
describe('delay queue: the next claim travels while the last one’s jobs run (issue 27)', () => {
  let app: DelayTestApp;
  let client: Redis;
  const consumers: Consumer[] = [];
  let restore: (() => void) | undefined;

  beforeEach(async () => {
    app = await createDelayApp();
    client = app.app.get(RedisConnection).client as Redis;
    await client.ping();
  });
  afterEach(async () => {
    restore?.();
    restore = undefined;
    await Promise.all(consumers.splice(0).map((consumer) => consumer.close({ timeout: 2_000 })));
    await app.close();
  });

  /** Claims called on the module connection, with whether their bytes went out and their reply came. */
  function watchClaims(): { outstandingOnWire: () => boolean; claims: () => number } {
    const wire = watchSocketWrites(client);
    const evalsha = client.evalsha;
    const pending = new Set<{ writesAtCall: number }>();
    let calls = 0;
    client.evalsha = function (this: Redis, ...args: unknown[]) {
      const reply = (evalsha as (...a: unknown[]) => Promise<unknown>).apply(this, args);
      if (args[0] !== claimDueJobsScript.sha) return reply;
      calls++;
      const claim = { writesAtCall: wire.count() };
      pending.add(claim);
      const settled = () => void pending.delete(claim);
      reply.then(settled, settled);
      return reply;
    } as typeof client.evalsha;
    restore = () => {
      wire.stop();
      client.evalsha = evalsha;
    };
    return {
      outstandingOnWire: () => [...pending].some((claim) => wire.count() > claim.writesAtCall),
      claims: () => calls,
    };
  }

  /** Schedules `jobs` jobs of `topic`, due now (payloads 0 to jobs - 1), then watches the claims. */
  async function backlog(topic: string, jobs: number): Promise<ReturnType<typeof watchClaims>> {
    await app.queue.scheduleMany(
      topic,
      Array.from({ length: jobs }, (_, i) => ({ payload: i })),
    );
    return watchClaims();
  }

  /** A consumer of `topic` on the app, closed after the test. */
  function consume<T>(topic: string, handler: DelayedJobHandler<T>, options: ConsumerOptions): Consumer {
    const consumer = app.queue.consume<T>(topic, handler, options);
    consumers.push(consumer);
    return consumer;
  }

  it('a backlog of short handlers: most jobs start while the next claim is on the wire; each job runs once', async () => {
    const jobs = 400;
    const topic = 'ahead.backlog';
    const watch = await backlog(topic, jobs);
    const runs = new Map<number, number>();
    let startedWithClaimOnWire = 0;
    consume<number>(
      topic,
      (i) => {
        runs.set(i, (runs.get(i) ?? 0) + 1);
        if (watch.outstandingOnWire()) startedWithClaimOnWire++;
      },
      { concurrency: 4 },
    );
    await waitFor(() => runs.size === jobs || undefined, 30_000, `all ${jobs} jobs to run`);
    expect([...runs.values()].every((count) => count === 1)).toBe(true);
    // Claims grow with the consumer's turnover (4, 8, … up to 20 per claim): well over half the
    // jobs come in batches claimed while a batch before them was running.
    expect(startedWithClaimOnWire).toBeGreaterThan(jobs / 2);
    expect(watch.claims()).toBeLessThan(jobs / 4);
  });

  it('with a rate limit no claim is sent ahead: a claimed job starts at once', async () => {
    const jobs = 120;
    const topic = 'ahead.rate';
    const watch = await backlog(topic, jobs);
    let started = 0;
    let startedWithClaimOnWire = 0;
    consume<number>(
      topic,
      () => {
        started++;
        if (watch.outstandingOnWire()) startedWithClaimOnWire++;
      },
      { concurrency: 4, rateLimit: { max: 10_000, duration: 1_000 } },
    );
    await waitFor(() => started === jobs || undefined, 30_000, `all ${jobs} jobs to run`);
    expect(startedWithClaimOnWire).toBe(0);
  });

  it(
    "the acknowledgement of a group's job rides on the claim that takes the group's next job: the group " +
      'never looks drained with a job left',
    async () => {
      const topic = 'ahead.group';
      await app.queue.scheduleMany(
        topic,
        ['g1', 'g2'].map((payload) => ({ payload, group: 'g' })),
      );
      const evalsha = client.evalsha;
      let ackScripts = 0;
      client.evalsha = function (this: Redis, ...args: unknown[]) {
        if (args[0] === ackJobsScript.sha) ackScripts++;
        return (evalsha as (...a: unknown[]) => Promise<unknown>).apply(this, args);
      } as typeof client.evalsha;
      restore = () => (client.evalsha = evalsha);
      const release = deferred();
      const started: Array<{ payload: string; ackScriptsBefore: number }> = [];
      consumers.push(
        app.queue.consume<string>(
          topic,
          async (payload) => {
            started.push({ payload, ackScriptsBefore: ackScripts });
            if (payload === 'g1') await release.promise;
          },
          { concurrency: 4 },
        ),
      );
      await waitFor(() => started.length === 1 || undefined, 10_000, 'g1 to run');
      release.resolve();
      await waitFor(() => started.length === 2 || undefined, 10_000, 'g2 to run');
      // g2 could only be claimed once g1's acknowledgement freed the group's turn: that acknowledgement
      // rode on the claim that took g2 (no acknowledgement script of its own before g2 started).
      expect(started).toEqual([
        { payload: 'g1', ackScriptsBefore: 0 },
        { payload: 'g2', ackScriptsBefore: 0 },
      ]);
    },
  );

  it('stopping with a claim ahead in flight hands its jobs back: another consumer runs every job once, on its first attempt', async () => {
    const jobs = 300;
    const topic = 'ahead.stop';
    const watch = await backlog(topic, jobs);
    const attempts = new Map<number, number[]>();
    let closing: Promise<void> | undefined;
    const first = consume<number>(
      topic,
      (i, job: JobContext) => {
        attempts.set(i, [...(attempts.get(i) ?? []), job.attempt]);
        // Stop in the middle of a batch, while the claim sent ahead of it is on the wire.
        if (!closing && attempts.size >= 100 && watch.outstandingOnWire()) closing = first.close({ timeout: 5_000 });
      },
      { concurrency: 4 },
    );
    await waitFor(() => closing !== undefined || undefined, 30_000, 'the first consumer to stop with a claim ahead in flight');
    await closing;
    const ranFirst = attempts.size;
    expect(ranFirst).toBeLessThan(jobs);
    consume<number>(
      topic,
      (i, job: JobContext) => {
        attempts.set(i, [...(attempts.get(i) ?? []), job.attempt]);
      },
      { concurrency: 4 },
    );
    // Jobs left to their visibility timeout (30 s) would not come back within this wait.
    await waitFor(() => attempts.size === jobs || undefined, 20_000, `all ${jobs} jobs to run`);
    const runs = [...attempts.values()];
    expect(runs.filter((list) => list.length !== 1)).toEqual([]);
    expect(runs.filter((list) => list[0] !== 1)).toEqual([]);
  });
});
