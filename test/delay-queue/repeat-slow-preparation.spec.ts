import { advanceRepeatScript } from '../../lib/delay-queue/scripts/advance-repeat.lua.js';
import type { JobContext } from '../../lib/index.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { testRedisUrl } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';
import { useDelayInstances } from './support/delay-instances.js';

const TOPIC = 'tick.slow.preparation';
const VISIBILITY_MS = 1_000;
/** How long the link stalls once the advance that follows a tick's claim is on it: past the claim's visibility. */
const STALL_MS = 1_500;

/**
 * A repeat tick's handler starts once its preparation (the advance that queues the next tick) has
 * settled. When that preparation outlasts the claim's visibility (the link stalls right after the
 * claim), the claim can no longer be counted on: like a job that waited in the prefetch buffer past
 * it, the tick must not start (its handler's signal would read aborted at once, and a success be
 * handed back to run again as attempt 2). It goes back to the queue with its attempt undone, and
 * runs once, on its first attempt, once the link is back.
 */
describe('a repeat tick whose preparation outlasts its claim', () => {
  const instances = useDelayInstances('rsp');
  let proxy: FaultProxy | undefined;

  afterAll(async () => {
    proxy?.heal();
    await proxy?.stop();
  });

  it('never starts on the lost claim, and runs once, on its first attempt, after the stall', async () => {
    const url = new URL(testRedisUrl());
    const link = await FaultProxy.start({ port: Number(url.port) });
    proxy = link;
    const [app] = await instances.start(1, { redis: link.url, unreachableTimeout: 20_000 });
    const runs: Array<{ tick: string; attempt: number; signalAborted: boolean }> = [];
    app.queue.consume(
      TOPIC,
      (_payload: unknown, job: JobContext) => {
        runs.push({ tick: job.id, attempt: job.attempt, signalAborted: job.signal.aborted });
      },
      { visibilityTimeout: VISIBILITY_MS },
    );
    // The link stalls as the first advance (right after the first tick's claim) reaches it.
    let stalledAt: number | undefined;
    const trap = link.observe((args) => {
      if (stalledAt === undefined && args[0]?.toLowerCase() === 'evalsha' && args[1] === advanceRepeatScript.sha) {
        stalledAt = performance.now();
        link.blackhole();
      }
      return false;
    });
    const info = await app.queue.repeat(TOPIC, { every: 3_000 });
    await waitFor(() => stalledAt ?? undefined, 10_000, 'the advance after the first claim');
    trap.stop();
    await sleep(STALL_MS);
    expect(runs).toEqual([]);
    link.heal();

    const firstTick = `repeat:${info.id}@${info.nextRunAt.getTime()}`;
    await waitFor(() => runs.some((run) => run.tick === firstTick) || undefined, 10_000, 'the first tick to run');
    // Settled: the first tick acknowledged, nothing of it left to run again.
    const acknowledged = async () => (await app.queue.get(TOPIC, firstTick)) === null;
    await waitFor(async () => (await acknowledged()) || undefined, 10_000, 'the acknowledgement', { retryErrors: true });
    expect(runs.filter((run) => run.tick === firstTick).map(({ attempt, signalAborted }) => ({ attempt, signalAborted }))).toEqual([
      { attempt: 1, signalAborted: false },
    ]);
  }, 30_000);
});
