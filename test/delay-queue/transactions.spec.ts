import {
  InvalidJobError,
  runInTransaction,
  type TransactionStatus,
  type TransactionSynchronization,
  type TransactionSynchronizer,
} from '../../lib/index.js';
import { createDelayApp, useDelayApp } from './support/delay-test-app.js';
import { waitFor } from '../support/timing.js';
import { topicStats } from '../support/topic-stats.js';

describe('DelayQueueService inside a transaction', () => {
  const t = useDelayApp();

  it('enqueues a job scheduled in a transaction only after it commits', async () => {
    let insideId = '';
    await runInTransaction(async () => {
      insideId = await t.queue.schedule('tx.commit', { n: 1 }, { id: 'c1' });
      await t.queue.scheduleMany('tx.commit', [{ payload: 2, id: 'c2' }]);
      expect(await t.queue.get('tx.commit', 'c1')).toBeNull();
      expect((await t.queue.stats('tx.commit')).due).toBe(0);
    });
    expect(insideId).toBe('c1');
    expect((await t.queue.get('tx.commit', 'c1'))?.payload).toEqual({ n: 1 });
    expect((await t.queue.get('tx.commit', 'c2'))?.payload).toBe(2);
  });

  it('drops a job scheduled in a transaction that rolls back', async () => {
    await expect(
      runInTransaction(async () => {
        await t.queue.schedule('tx.rollback', 1, { id: 'r1' });
        throw new Error('business rule failed');
      }),
    ).rejects.toThrow('business rule failed');
    expect(await t.queue.get('tx.rollback', 'r1')).toBeNull();
    expect(await t.queue.stats('tx.rollback')).toEqual(topicStats());
  });

  it('still validates at the call, inside the transaction', async () => {
    await expect(
      runInTransaction(async () => {
        await t.queue.schedule('tx.invalid', { n: 1n });
      }),
    ).rejects.toBeInstanceOf(InvalidJobError);
  });

  it('runs a committed job on a consumer', async () => {
    const seen: unknown[] = [];
    const consumer = t.queue.consume('tx.run', (payload) => {
      seen.push(payload);
    });
    await runInTransaction(() => t.queue.schedule('tx.run', 'after-commit'));
    await waitFor(() => seen.length === 1, 5_000, 'the committed job');
    expect(seen).toEqual(['after-commit']);
    await consumer.close();
  });

  it('uses the TransactionSynchronizer given in the module options', async () => {
    const pending: TransactionSynchronization[] = [];
    const port: TransactionSynchronizer = { isActive: () => true, register: (s) => void pending.push(s) };
    const custom = await createDelayApp({ transactions: port });
    try {
      await custom.queue.schedule('tx.port', 1, { id: 'p1' });
      await custom.queue.schedule('tx.port', 2, { id: 'p2' });
      expect(pending).toHaveLength(2);
      const finish = (s: TransactionSynchronization, status: TransactionStatus) => s.afterCompletion(status);
      await finish(pending[0], 'committed');
      await finish(pending[1], 'rolled-back');
      expect((await custom.queue.get('tx.port', 'p1'))?.payload).toBe(1);
      expect(await custom.queue.get('tx.port', 'p2')).toBeNull();
    } finally {
      await custom.close();
    }
  });
});
