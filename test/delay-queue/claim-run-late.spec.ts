import { type JobContext } from '../../lib/index.js';
import { sleep, waitFor } from '../support/timing.js';
import { useDelayInstances } from './support/delay-instances.js';

/*
 * A claim Redis runs late (CLIENT PAUSE here; a busy server or a failover's pause of the old master
 * alike) starts its visibility at that run. The consumer counts it from the earliest moment Redis's
 * clock can have shown the run (ServerClock.earliestLocal), not from the write: counted from the
 * write, the claim looked lost on arrival, the job was dropped unrun and Redis's recovery spent its
 * attempt (with maxAttempts 1: dead without a run). docs/guarantees.md: "no attempt spent without a run".
 */
const VISIBILITY_MS = 1_000;
const PAUSE_MS = 1_600;

describe('a claim that Redis runs late (CLIENT PAUSE)', () => {
  const instances = useDelayInstances('claim-late');

  it('runs its job on its first attempt, not dead unrun', async () => {
    const topic = 'claim.paused';
    const [app] = await instances.start(1, { delayQueue: { maxAttempts: 1 } });
    const runs: number[] = [];
    const dueAt = Date.now() + 800;
    const id = await app!.queue.schedule(topic, { n: 1 }, { at: dueAt });
    app!.queue.consume(topic, (_payload: unknown, job: JobContext) => void runs.push(job.attempt), {
      visibilityTimeout: VISIBILITY_MS,
      maxIdleWait: 10_000,
    });
    // The pause begins just before the job falls due, so the claim that takes it is held by Redis.
    await sleep(dueAt - Date.now() - 150);
    await instances.redis().call('CLIENT', 'PAUSE', String(PAUSE_MS), 'ALL');
    const settled = async () => {
      const job = await app!.queue.get(topic, id);
      return job === null || job.state === 'dead' || undefined;
    };
    await waitFor(settled, 10_000, 'the acknowledgement (or the dead letter)', { every: 50, retryErrors: true });
    const dead = await app!.queue.get(topic, id);
    expect({ runs, dead: dead?.lastError }).toEqual({ runs: [1], dead: undefined });
  }, 30_000);
});
