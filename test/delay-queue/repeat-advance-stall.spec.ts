import { readRepeatsScript } from '../../lib/delay-queue/scripts/read-repeats.lua.js';
import type { JobContext } from '../../lib/index.js';
import { uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { useFaultProxy } from '../support/use-fault-proxy.js';
import { useDelayInstances } from './support/delay-instances.js';

const TOPIC = 'tick.stall';
const EVERY = 500;

/**
 * "The consumer that claims tick N queues tick N+1 as it claims N, before running it" and a failed
 * advance "is repaired by the periodic check" (docs/scheduling.md): when the claimer's link stalls
 * (or the claimer dies) between the claim of a tick and the advance that queues the next one, another
 * instance's periodic check queues it, instead of the schedule standing still until the claimed
 * tick's visibility timeout (30 s) brings it back.
 */
describe('a repeat whose claimer stalls between the claim and the advance', () => {
  const instances = useDelayInstances('ras');
  const stalled = useFaultProxy();

  it('goes on with the other instance within a check interval, each tick once', async () => {
    const keyPrefix = uniquePrefix('ras');
    const runs: Array<{ instance: string; tick: number; attempt: number }> = [];
    const handler = (instance: string) => (_payload: unknown, job: JobContext) =>
      void runs.push({ instance, tick: Number(job.id.split('@')[1]), attempt: job.attempt });
    const [a] = await instances.start(1, { keyPrefix, redis: stalled.url });
    a.queue.consume(TOPIC, handler('a'), { concurrency: 1, maxIdleWait: 1_000 });
    await a.queue.repeat(TOPIC, { every: EVERY });
    await waitFor(() => runs.length >= 2 || undefined, 10_000, 'the first ticks on a');

    // a's link stalls for good as it reads the schedule after claiming a tick: the claim reached
    // Redis, the advance that would queue the next tick did not. (A read of its periodic check can
    // come first: then the link is healed and the trap set again.)
    // Another instance of the service: it declares the same schedule at start, as each instance does.
    const [b] = await instances.start(1, { keyPrefix });
    await b.queue.repeat(TOPIC, { every: EVERY });
    let stalledTick: number | undefined;
    for (let attempt = 0; attempt < 5 && stalledTick === undefined; attempt++) {
      let fired = false;
      const trap = stalled.observe((args) => {
        if (!fired && args[0]?.toLowerCase() === 'evalsha' && args[1] === readRepeatsScript.sha && args.includes(TOPIC)) {
          fired = true;
          stalled.blackhole();
        }
        return false;
      });
      await waitFor(() => fired || undefined, 10_000, "a's next read of the schedule");
      trap.stop();
      const [info] = await b.queue.listRepeats(TOPIC);
      const state = (await b.queue.get(TOPIC, `repeat:${info.id}@${info.nextRunAt.getTime()}`))?.state;
      if (state === 'active') stalledTick = info.nextRunAt.getTime();
      else stalled.heal();
    }
    expect(stalledTick).toBeDefined();
    b.queue.consume(TOPIC, handler('b'), { concurrency: 1, maxIdleWait: 1_000 });
    // Before: nothing ran until the stalled tick's visibility timeout (30 s) passed.
    await waitFor(
      () => runs.some((run) => run.instance === 'b' && run.tick > stalledTick!) || undefined,
      15_000,
      'b to run a tick after the stalled one',
    );
    const ticks = runs.map((run) => run.tick);
    expect(ticks.filter((tick, i) => ticks.indexOf(tick) !== i)).toEqual([]);
  }, 60_000);
});
