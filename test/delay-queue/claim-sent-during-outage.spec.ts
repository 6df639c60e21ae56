import type { Redis } from 'ioredis';
import { type JobContext } from '../../lib/index.js';
import { awaitingReplies } from '../../lib/core/redis/ioredis-internals.js';
import { RedisConnection } from '../../lib/core/connection/redis-connection.js';
import { claimDueJobsScript } from '../../lib/delay-queue/scripts/claim-due-jobs.lua.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { testRedisUrl } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';
import { useDelayInstances } from './support/delay-instances.js';

const VISIBILITY_MS = 1_000;
/** How long after the job fell due the outage lasts: half as long again as the visibility timeout, well inside the unreachable bound. */
const OUTAGE_MS = 1_500;
const UNREACHABLE_TIMEOUT_MS = 20_000;

/**
 * A claim that cannot reach Redis at once (issued while the connection is down, it waits in the
 * client's queue; written just before the connection was lost, it is re-sent after the reconnect)
 * runs in Redis only once the connection is back, and Redis starts the visibility of the jobs it
 * takes then. The consumer's own count of that visibility (by which it tells a handler its claim is
 * lost, and hands back the job of a handler that returned after that) must start no earlier than
 * the write that Redis answered, not when the claim was issued or first written: counted from
 * there, a claim that waited longer than the visibility timeout arrives lost already, and its job
 * is dropped unrun and comes back at Redis's deadline on its next attempt; with a shorter wait the
 * job runs, its handler's success is handed back, and it is claimed again at once as attempt 2
 * though Redis held the claim all along (the scheduled-work checker's
 * `tick-redelivered-without-cause` right after a Redis restart).
 */
describe('a claim that reaches Redis only after an outage', () => {
  const instances = useDelayInstances('cso');
  const proxies: FaultProxy[] = [];

  afterAll(async () => {
    for (const proxy of proxies) {
      proxy.heal();
      proxy.restore();
      await proxy.stop();
    }
  });

  /**
   * Schedules one job, starts a consumer and lets it learn the job's due time, starts the outage
   * (`begin`) before the job falls due, ends it (`end`) OUTAGE_MS after the due time, and returns
   * the job's runs once it is acknowledged, and how many claims reached the link meanwhile.
   */
  async function runThroughOutage(
    topic: string,
    begin: (link: FaultProxy, connection: RedisConnection) => Promise<void>,
    end: (link: FaultProxy) => void,
  ) {
    const url = new URL(testRedisUrl());
    const link = await FaultProxy.start({ port: Number(url.port) });
    proxies.push(link);
    const [app] = await instances.start(1, {
      redis: link.url,
      unreachableTimeout: UNREACHABLE_TIMEOUT_MS,
      delayQueue: { maxAttempts: 3 },
    });
    const connection = app.app.get(RedisConnection);
    const runs: Array<{ attempt: number; signalAborted: boolean }> = [];
    const claims = link.observe(FaultProxy.script(claimDueJobsScript));
    // Far enough ahead that the consumer's first claim and the outage's start come before it, on a loaded machine too.
    const dueAt = Date.now() + 3_000;
    const id = await app.queue.schedule(topic, { n: 1 }, { at: dueAt });
    app.queue.consume(
      topic,
      (_payload: unknown, job: JobContext) => {
        runs.push({ attempt: job.attempt, signalAborted: job.signal.aborted });
      },
      { visibilityTimeout: VISIBILITY_MS, maxIdleWait: 10_000 },
    );
    // The consumer's first claim has been answered: it knows the due time and waits for it.
    const firstClaimAnswered = () => claims.count >= 1 && awaitingReplies(connection.client as Redis) === 0;
    await waitFor(() => firstClaimAnswered() || undefined, 5_000, 'the first claim answered', { every: 5 });
    await begin(link, connection);
    expect(Date.now()).toBeLessThan(dueAt);
    const claimsBefore = claims.count;
    await sleep(dueAt - Date.now() + OUTAGE_MS);
    expect(runs).toEqual([]);
    const claimsWritten = claims.count - claimsBefore;
    end(link);
    const acknowledged = async () => (await app.queue.get(topic, id)) === null;
    await waitFor(async () => (await acknowledged()) || undefined, 10_000, 'the acknowledgement', { every: 50, retryErrors: true });
    claims.stop();
    expect((await app.queue.stats(topic)).dead).toBe(0);
    return { runs, claimsWritten };
  }

  it('issued while the connection is down: runs its job once Redis is back, on its first attempt, and acknowledges it', async () => {
    const { runs, claimsWritten } = await runThroughOutage(
      'claim.queued',
      async (link, connection) => {
        link.cut();
        // The client knows the connection is lost: a claim issued from now on waits in its queue.
        const lost = () => connection.reachability!.isDown;
        await waitFor(() => lost() || undefined, 2_000, 'the client to see the connection lost', { every: 5 });
      },
      (link) => link.restore(),
    );
    // Nothing reached the link during the outage: the claim that took the job was written after it.
    expect(claimsWritten).toBe(0);
    // Attempt 1: run by the claim that waited out the outage, not by a recovery after its visibility passed.
    expect(runs).toEqual([{ attempt: 1, signalAborted: false }]);
  }, 30_000);

  it('written into a stalled link, re-sent after the reconnect: runs its job once, on its first attempt, and acknowledges it', async () => {
    const { runs, claimsWritten } = await runThroughOutage(
      'claim.resent',
      async (link) => link.blackhole(),
      (link) => {
        // The stall outlasts TCP: the connections (and the claim held in them) are reset, and the
        // client's reconnect goes through; it re-sends the unanswered claim.
        link.resetAll();
        link.heal();
      },
    );
    // The claim for the due job reached the stalled link (and was held there).
    expect(claimsWritten).toBeGreaterThanOrEqual(1);
    expect(runs).toEqual([{ attempt: 1, signalAborted: false }]);
  }, 30_000);
});
