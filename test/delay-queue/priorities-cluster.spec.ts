import { waitFor } from '../support/timing.js';
import { useClusterQueues } from './support/cluster-queues.js';

describe('priorities on a Redis Cluster', () => {
  const cluster = useClusterQueues('prio');
  const { consumers } = cluster;

  it('runs due jobs by priority, later ones at their time, across two instances; cancel and reschedule work', async () => {
    const [a, b] = await cluster.start(2);
    await a.scheduleMany(
      'cluster.prio',
      [5, 1, 3, 0, 2].map((priority) => ({ payload: `p${priority}`, priority, id: `p${priority}` })),
    );
    await b.schedule('cluster.prio', 'later', { priority: 9, delay: 400, id: 'later' });
    await b.schedule('cluster.prio', 'gone', { priority: 1, id: 'gone' });
    await b.schedule('cluster.prio', 'moved', { priority: 9, id: 'moved' });
    expect(await a.cancel('cluster.prio', 'gone')).toBe(true);
    expect(await a.reschedule('cluster.prio', 'moved', { delay: 600 })).toBe(true);
    expect(await b.get('cluster.prio', 'p3')).toMatchObject({ state: 'due', priority: 3 });
    const seen: string[] = [];
    consumers.push(b.consume<string>('cluster.prio', (payload) => void seen.push(payload), { concurrency: 1 }));
    await waitFor(() => seen.length === 7, 15_000, 'every job');
    expect(seen).toEqual(['p0', 'p1', 'p2', 'p3', 'p5', 'later', 'moved']);
    await waitFor(async () => (await a.stats('cluster.prio')).active === 0, 5_000, 'the last acknowledgement');
    expect(await a.stats('cluster.prio')).toMatchObject({ due: 0, scheduled: 0, active: 0 });
  });
});
