import type { ScheduleResult } from '../../lib/index.js';
import { waitFor } from '../support/timing.js';
import { useClusterQueues } from './support/cluster-queues.js';

/**
 * Throttle and debounce on a Redis Cluster: the dedupe key lives in the topic's (shard's) hash tag,
 * so the schedule script that decides it runs in one slot, on a plain and on a sharded topic (a job
 * with a dedupe key goes to the key's shard, so every call of a key meets the same key).
 */
describe('Throttle and debounce on a Redis Cluster', () => {
  const cluster = useClusterQueues('ded');
  const { consumers } = cluster;

  it.each([1, 3])('throttles racing calls of two instances to one job per key, and debounces to one run (%i shard(s))', async (shards) => {
    const queues = await cluster.start(2, { 'cluster.dedupe': shards });
    const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
    const calls: Array<Promise<ScheduleResult>> = [];
    for (let round = 0; round < 10; round++) {
      for (const queue of queues) {
        for (const key of keys) {
          calls.push(queue.scheduleWithResult('cluster.dedupe', key, { delay: 60_000, dedupe: { key: `t:${key}`, ttl: 60_000 } }));
        }
      }
    }
    const results = await Promise.all(calls);
    for (const [k, key] of keys.entries()) {
      const answers = results.filter((_, n) => n % keys.length === k);
      expect({ key, created: answers.filter((a) => a.status === 'created').length, ids: new Set(answers.map((a) => a.id)).size }).toEqual({
        key,
        created: 1,
        ids: 1,
      });
    }
    expect((await queues[1].stats('cluster.dedupe')).scheduled).toBe(keys.length);

    const runs: Array<[string, unknown]> = [];
    const debounced: ScheduleResult[] = [];
    for (let n = 0; n < 6; n++) {
      debounced.push(
        await queues[n % 2].scheduleWithResult('cluster.debounced', n, { dedupe: { key: 'd', ttl: 1_000, mode: 'debounce' } }),
      );
    }
    expect(debounced.map((r) => r.status)).toEqual(['created', 'replaced', 'replaced', 'replaced', 'replaced', 'replaced']);
    // Consumed only now: a consumer already running would rightly run the job when one of the calls
    // comes more than the 1 s window after the one before (a stall of a loaded machine).
    consumers.push(queues[0].consume('cluster.debounced', (payload, job) => void runs.push([job.id, payload])));
    await waitFor(() => runs.length > 0, 10_000, 'the debounced run');
    await waitFor(async () => (await queues[1].stats('cluster.debounced')).active === 0, 5_000, 'the acknowledgement');
    expect(runs).toEqual([[debounced[0].id, 5]]);
  });
});
