import { parseTickJobId } from '../../lib/delay-queue/jobs/tick-job-id.js';
import { waitFor } from '../support/timing.js';
import { useClusterQueues } from './support/cluster-queues.js';

const EVERY = 300;
const SCHEDULES = ['a', 'b', 'c', 'd', 'e'];

describe('repeat() on a Redis Cluster', () => {
  const cluster = useClusterQueues('rep');
  const { consumers } = cluster;

  it.each([1, 3])(
    'runs every tick of several schedules exactly once over two instances (%i shard(s))',
    async (shards) => {
      const queues = await cluster.start(2, { 'cluster.tick': shards });
      const runs = new Map<string, number>();
      for (const queue of queues) {
        // catchUp 'all': ticks that came due before the consumers started (a slow start on a loaded
        // host) run each, so every tick since the first runs, consecutive.
        for (const id of SCHEDULES) await queue.repeat('cluster.tick', { every: EVERY }, { id, catchUp: 'all' });
      }
      for (const queue of queues) {
        consumers.push(
          queue.consume('cluster.tick', (_payload, job) => {
            runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
          }),
        );
      }
      await waitFor(() => runs.size >= SCHEDULES.length * 5, 30_000, 'five ticks of every schedule');
      await Promise.all(consumers.splice(0).map((consumer) => consumer.close()));
      expect([...runs.values()].every((count) => count === 1)).toBe(true);
      for (const id of SCHEDULES) {
        const ticks = [...runs.keys()]
          .map((jobId) => parseTickJobId(jobId)!)
          .filter((tick) => tick.scheduleId === id)
          .map((tick) => tick.tickMs)
          .sort((x, y) => x - y);
        expect(ticks.length).toBeGreaterThanOrEqual(2);
        for (let i = 1; i < ticks.length; i++) expect(ticks[i] - ticks[i - 1]).toBe(EVERY);
      }
      expect((await queues[0].listRepeats('cluster.tick')).map((info) => info.id).sort()).toEqual(SCHEDULES);
      for (const id of SCHEDULES) expect(await queues[1].removeRepeat('cluster.tick', id)).toBe(true);
      expect(await queues[0].listRepeats('cluster.tick')).toEqual([]);
    },
    90_000,
  );
});
