import { jest } from '@jest/globals';
import { InvalidJobError, runInTransaction, type DelayQueueService, type JobContext } from '../../lib/index.js';
import { useDelayApp } from './support/delay-test-app.js';
import { useRawRedis } from '../support/test-app.js';
import { deferred, waitFor } from '../support/timing.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';

failOnUnhandledRejections();

/**
 * `scheduleWithResult()` / `scheduleManyWithResult()` tell the caller what scheduling did with an id:
 * created a job, found one (waiting, running or dead: kept), or replaced it; inside a transaction
 * the write happens after the commit, so the answer is `'deferred'`, never a guess. The lost-reply
 * replay (the answer of the first run) is a row of test/faults/lost-replies.spec.ts.
 */
describe('De-duplication visible to the caller', () => {
  beforeAll(() => muteNestLogger('error'));
  const t = useDelayApp({ delayQueue: { topics: { spread: { shards: 4 } } } });
  let queue: DelayQueueService;
  beforeAll(() => (queue = t.queue));
  afterAll(() => jest.restoreAllMocks());
  const redis = useRawRedis();

  it('answers created for a new id (given or generated), and schedule() still resolves to the id alone', async () => {
    expect(await queue.scheduleWithResult('created', { n: 1 }, { id: 'new', delay: 60_000 })).toEqual({ id: 'new', status: 'created' });
    const generated = await queue.scheduleWithResult('created', { n: 2 }, { delay: 60_000 });
    expect(generated).toEqual({ id: expect.any(String), status: 'created' });
    expect((await queue.get('created', generated.id))?.payload).toEqual({ n: 2 });
    expect(await queue.schedule('created', { n: 3 }, { id: 'plain', delay: 60_000 })).toBe('plain');
  });

  it('answers existing for a waiting job and keeps it; replaced with replace: true', async () => {
    await queue.schedule('waiting', 'first', { id: 'w', delay: 60_000 });
    expect(await queue.scheduleWithResult('waiting', 'second', { id: 'w' })).toEqual({ id: 'w', status: 'existing' });
    expect((await queue.get('waiting', 'w'))?.payload).toBe('first');
    expect(await queue.scheduleWithResult('waiting', 'third', { id: 'w', delay: 60_000, replace: true })).toEqual({
      id: 'w',
      status: 'replaced',
    });
    expect((await queue.get('waiting', 'w'))?.payload).toBe('third');
  });

  it('leaves no operation record behind: a plain schedule asks for none, a replace deletes its own once answered', async () => {
    await queue.schedule('records', 1, { id: 'a', delay: 60_000 });
    await queue.scheduleMany('records', [{ payload: 2, id: 'b', delay: 60_000 }]);
    const replaced = await queue.scheduleWithResult('records', 3, { id: 'a', delay: 60_000, replace: true });
    expect(replaced).toEqual({ id: 'a', status: 'replaced' });
    expect([(await queue.get('records', 'a'))?.payload, (await queue.get('records', 'b'))?.payload]).toEqual([3, 2]);
    // Answered records are deleted right after the reply, without holding up the call (AnsweredRecords).
    await waitFor(async () => (await redis.keys(`${t.keyPrefix}:dq:{records}:op:*`)).length === 0, 5_000, 'the records deleted');
  });

  it('answers existing for a running job, which runs once', async () => {
    const started = deferred<JobContext>();
    const finish = deferred();
    const runs: number[] = [];
    const consumer = queue.consume<number>('running', async (n, job) => {
      runs.push(n);
      started.resolve(job);
      await finish.promise;
    });
    await queue.schedule('running', 1, { id: 'r' });
    await started.promise;
    expect(await queue.scheduleWithResult('running', 2, { id: 'r' })).toEqual({ id: 'r', status: 'existing' });
    finish.resolve();
    await waitFor(async () => (await queue.get('running', 'r')) === null, 5_000, 'the acknowledgement');
    await consumer.close();
    expect(runs).toEqual([1]);
  });

  it('answers existing for a dead job, and created once it is gone', async () => {
    const consumer = queue.consume(
      'dead',
      () => {
        throw new Error('buried on purpose');
      },
      { maxAttempts: 1 },
    );
    await queue.schedule('dead', 'x', { id: 'd' });
    await waitFor(async () => (await queue.stats('dead')).dead === 1, 5_000, 'the dead letter');
    await consumer.close();
    expect(await queue.scheduleWithResult('dead', 'y', { id: 'd' })).toEqual({ id: 'd', status: 'existing' });
    expect((await queue.get('dead', 'd'))?.state).toBe('dead');
    await queue.cancel('dead', 'd');
    expect(await queue.scheduleWithResult('dead', 'z', { id: 'd', delay: 60_000 })).toEqual({ id: 'd', status: 'created' });
  });

  it('answers each job of a batch in order, across the shards of a sharded topic', async () => {
    const ids = Array.from({ length: 12 }, (_, i) => `s-${i}`);
    await queue.scheduleMany(
      'spread',
      ids.filter((_, i) => i % 3 !== 0).map((id) => ({ payload: 'old', id, delay: 60_000 })),
    );
    const results = await queue.scheduleManyWithResult(
      'spread',
      ids.map((id, i) => ({ payload: 'new', id, delay: 60_000, replace: i % 3 === 2 })),
    );
    expect(results).toEqual(ids.map((id, i) => ({ id, status: ['created', 'existing', 'replaced'][i % 3] })));
    expect(await queue.scheduleManyWithResult('spread', [])).toEqual([]);
    // The same id twice in one batch: the second finds the first.
    expect(
      await queue.scheduleManyWithResult('spread', [
        { payload: 1, id: 'twice' },
        { payload: 2, id: 'twice' },
      ]),
    ).toEqual([
      { id: 'twice', status: 'created' },
      { id: 'twice', status: 'existing' },
    ]);
  });

  it('answers deferred inside a transaction: the job is written after the commit, and nothing on rollback', async () => {
    await queue.schedule('tx', 'existing', { id: 'kept', delay: 60_000 });
    const inside = await runInTransaction(async () => {
      const results = [
        await queue.scheduleWithResult('tx', 'fresh', { id: 'fresh', delay: 60_000 }),
        await queue.scheduleWithResult('tx', 'again', { id: 'kept', delay: 60_000 }),
        ...(await queue.scheduleManyWithResult('tx', [{ payload: 'many', id: 'many', delay: 60_000 }])),
      ];
      expect(await queue.get('tx', 'fresh')).toBeNull();
      return results;
    });
    expect(inside).toEqual([
      { id: 'fresh', status: 'deferred' },
      { id: 'kept', status: 'deferred' },
      { id: 'many', status: 'deferred' },
    ]);
    await waitFor(
      async () => (await queue.get('tx', 'fresh')) !== null && (await queue.get('tx', 'many')) !== null,
      5_000,
      'the writes after the commit',
    );
    expect((await queue.get('tx', 'kept'))?.payload).toBe('existing');

    await expect(
      runInTransaction(async () => {
        expect(await queue.scheduleWithResult('tx', 'rolled back', { id: 'never' })).toEqual({ id: 'never', status: 'deferred' });
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    expect(await queue.get('tx', 'never')).toBeNull();
  });

  it('refuses what schedule() refuses, before writing anything', async () => {
    await expect(queue.scheduleWithResult('bad', 1, { id: '' })).rejects.toBeInstanceOf(InvalidJobError);
    await expect(queue.scheduleManyWithResult('bad', [{ payload: 1 }, { payload: 2, delay: -1 }])).rejects.toBeInstanceOf(InvalidJobError);
    await expect(queue.scheduleManyWithResult('bad', 'nope' as never)).rejects.toBeInstanceOf(InvalidJobError);
    expect(await queue.stats('bad')).toMatchObject({ scheduled: 0, due: 0 });
  });
});
