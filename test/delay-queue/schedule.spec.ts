import { InvalidJobError, InvalidTopicError, type DelayQueueService } from '../../lib/index.js';
import { useRawRedis } from '../support/test-app.js';
import { createDelayApp, useDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import { topicStats } from '../support/topic-stats.js';

describe('DelayQueueService: scheduling (no consumer running)', () => {
  const t = useDelayApp();
  const redis = useRawRedis();
  let queue: DelayQueueService;
  beforeAll(() => (queue = t.queue));

  const keysOf = (prefix: string) => redis.keys(`${prefix}:*`);

  it('returns the job id and stores the payload unchanged, due at the Redis clock plus the delay', async () => {
    const payload = { big: Number.MAX_SAFE_INTEGER, tiny: 5e-324, list: [], nested: { empty: {}, text: 'é 🎉 "q"' }, flag: false };
    const [secs] = await redis.time();
    const id = await queue.schedule('store', payload, { delay: 60_000 });
    expect(typeof id).toBe('string');
    const job = await queue.get('store', id);
    expect(job).toMatchObject({ id, topic: 'store', state: 'scheduled', attempts: 0, payload });
    const dueIn = job!.scheduledAt!.getTime() - Number(secs) * 1000;
    expect(dueIn).toBeGreaterThanOrEqual(59_000);
    expect(dueIn).toBeLessThanOrEqual(62_000);
  });

  it('keeps the first job when an id is scheduled twice, and replaces it only when asked', async () => {
    await queue.schedule('dedupe', { v: 1 }, { id: 'same', delay: 60_000 });
    expect(await queue.schedule('dedupe', { v: 2 }, { id: 'same', delay: 1_000 })).toBe('same');
    const first = await queue.get('dedupe', 'same');
    expect(first?.payload).toEqual({ v: 1 });

    await queue.schedule('dedupe', { v: 3 }, { id: 'same', delay: 120_000, replace: true });
    const replaced = await queue.get('dedupe', 'same');
    expect(replaced?.payload).toEqual({ v: 3 });
    expect(replaced!.scheduledAt!.getTime()).toBeGreaterThan(first!.scheduledAt!.getTime() + 30_000);
    expect((await queue.stats('dedupe')).scheduled).toBe(1);
  });

  it('treats a time in the past as due now', async () => {
    const id = await queue.schedule('past', 'x', { at: new Date(Date.now() - 60_000) });
    expect((await queue.get('past', id))?.state).toBe('due');
    expect(await queue.stats('past')).toEqual(topicStats({ due: 1 }));
  });

  describe('refuses, before writing anything', () => {
    let fresh: DelayTestApp;
    beforeAll(async () => {
      fresh = await createDelayApp();
    });
    afterAll(() => fresh.close());

    const circular: Record<string, unknown> = { a: 1 };
    circular.self = circular;
    const cases: Array<[string, unknown, RegExp]> = [
      ['a BigInt', { amount: 10n }, /payload\.amount.*BigInt/],
      ['a circular structure', circular, /payload\.self.*circular/],
      ['a function', { run: () => 1 }, /payload\.run.*function/],
      ['a Date', { at: new Date() }, /payload\.at.*Date.*toISOString/],
      ['a Map', { m: new Map([[1, 2]]) }, /payload\.m.*Map/],
      ['NaN', { n: NaN }, /payload\.n.*NaN/],
      ['Infinity in an array', [1, Infinity], /payload\[1\].*Infinity/],
      ['undefined', undefined, /payload.*undefined.*null/],
      ['an undefined array element', [1, undefined], /payload\[1\].*undefined/],
      ['a Buffer', { b: Buffer.from('x') }, /payload\.b.*binary/],
    ];
    it.each(cases)('a payload with %s', async (_what, payload, message) => {
      const error = await fresh.queue.schedule('refused', payload).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidJobError);
      expect((error as InvalidJobError).code).toBe('INVALID_JOB');
      expect((error as Error).message).toMatch(message);
      expect(await keysOf(fresh.keyPrefix)).toEqual([]);
    });

    it.each([
      ['a negative delay', { delay: -1 }, /delay.*-1/],
      ['a NaN delay', { delay: NaN }, /delay.*NaN/],
      ['an infinite delay', { delay: Infinity }, /delay.*Infinity/],
      ['a string delay', { delay: '5' }, /delay.*string/],
      ['an invalid Date', { at: new Date('nope') }, /at.*invalid Date/],
      ['both delay and at', { delay: 1, at: Date.now() }, /delay.*both/],
      ['an empty id', { id: '' }, /id/],
      ['maxAttempts 0', { maxAttempts: 0 }, /maxAttempts/],
      ['a backoff factor below 1', { backoff: { factor: 0.5 } }, /backoff\.factor/],
    ])('%s', async (_what, options, message) => {
      const error = await fresh.queue.schedule('refused', 1, options as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidJobError);
      expect((error as Error).message).toMatch(message);
      expect(await keysOf(fresh.keyPrefix)).toEqual([]);
    });

    it('a whole batch when one of its jobs is bad, naming the job', async () => {
      const error = await fresh.queue
        .scheduleMany<unknown>('refused', [{ payload: 1 }, { payload: 2 }, { payload: { when: new Date() } }])
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidJobError);
      expect((error as Error).message).toMatch(/jobs\[2\]\.payload\.when/);
      expect(await keysOf(fresh.keyPrefix)).toEqual([]);
    });

    it.each(['', 'has space', 'brace{x}', 'x'.repeat(129), 'tab\t'])('the topic %j', async (topic) => {
      await expect(fresh.queue.schedule(topic, 1)).rejects.toBeInstanceOf(InvalidTopicError);
      expect(() => fresh.queue.consume(topic, () => undefined)).toThrow(InvalidTopicError);
      expect(await keysOf(fresh.keyPrefix)).toEqual([]);
    });
  });

  it('schedules many jobs in order and de-duplicates within the batch', async () => {
    const ids = await queue.scheduleMany('many', [
      { payload: 'a', id: 'a', delay: 60_000 },
      { payload: 'b', delay: 60_000 },
      { payload: 'a2', id: 'a', delay: 60_000 },
    ]);
    expect(ids[0]).toBe('a');
    expect(ids[2]).toBe('a');
    expect((await queue.get('many', 'a'))?.payload).toBe('a');
    expect((await queue.stats('many')).scheduled).toBe(2);
    expect(await queue.scheduleMany('many', [])).toEqual([]);
  });

  it('orders jobs due in the same millisecond first-in first-out, beyond the 2048 slots of one millisecond', async () => {
    const at = Date.now() + 60_000;
    const count = 2500;
    const ids = await queue.scheduleMany(
      'fifo',
      Array.from({ length: count }, (_, i) => ({ payload: i, id: `j${i}`, at })),
    );
    await queue.schedule('fifo', 'late', { id: 'late', at });
    const dueKey = `${t.keyPrefix}:dq:{fifo}:due`;
    const order = await redis.zrange(dueKey, '0', '-1', 'WITHSCORES');
    const members = order.filter((_, i) => i % 2 === 0);
    expect(members).toEqual([...ids, 'late']);
    // Never earlier than asked: the spill-over lands in the next millisecond.
    const dueMs = order.filter((_, i) => i % 2 === 1).map((s) => Math.floor(Number(s) / 2048));
    expect(Math.min(...dueMs)).toBe(at);
    expect(Math.max(...dueMs)).toBe(at + 1);
  });

  it('cancels a waiting job once', async () => {
    const id = await queue.schedule('cancel', 1, { delay: 60_000 });
    expect(await queue.cancel('cancel', id)).toBe(true);
    expect(await queue.cancel('cancel', id)).toBe(false);
    expect(await queue.get('cancel', id)).toBeNull();
    expect(await queue.cancel('cancel', 'never-existed')).toBe(false);
  });

  it('reschedules a waiting job and leaves unknown ones alone', async () => {
    const id = await queue.schedule('move', 1, { delay: 60_000 });
    expect(await queue.reschedule('move', id, { delay: 0 })).toBe(true);
    expect((await queue.get('move', id))?.state).toBe('due');
    const at = Date.now() + 120_000;
    expect(await queue.reschedule('move', id, { at: new Date(at) })).toBe(true);
    expect((await queue.get('move', id))?.scheduledAt?.getTime()).toBe(at);
    expect(await queue.reschedule('move', 'unknown', { delay: 5 })).toBe(false);
    await expect(queue.reschedule('move', id, { delay: -5 })).rejects.toBeInstanceOf(InvalidJobError);
  });

  it('counts jobs by state', async () => {
    await queue.scheduleMany('stats', [{ payload: 1, delay: 60_000 }, { payload: 2, delay: 60_000 }, { payload: 3 }]);
    expect(await queue.stats('stats')).toEqual(topicStats({ scheduled: 2, due: 1 }));
    expect(await queue.stats('nothing-here')).toEqual(topicStats());
  });

  it('keeps a topic in one hash tag, so every script stays in one cluster slot', async () => {
    await queue.schedule('order.expire/eu#1', 1, { delay: 60_000 });
    const keys = await keysOf(t.keyPrefix);
    const tagged = keys.filter((k) => k.includes('order.expire/eu#1'));
    expect(tagged.length).toBeGreaterThan(0);
    for (const key of tagged) expect(key).toMatch(/\{order\.expire\/eu#1\}/);
  });
});
