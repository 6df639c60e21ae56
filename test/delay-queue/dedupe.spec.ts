import { InvalidJobError, runInTransaction, type DelayQueueService, type ScheduleResult } from '../../lib/index.js';
import { useDelayInstances } from './support/delay-instances.js';
import { deferred, waitFor } from '../support/timing.js';
import { rejectionOf } from '../support/thrown.js';

/**
 * `schedule(topic, payload, { dedupe: { key, ttl, mode } })` across instances sharing one Redis:
 * throttle keeps one job per key per ttl, debounce runs one job ttl after the last call with its
 * payload. Lost replies are rows of test/faults/lost-replies.spec.ts; a Redis Cluster is
 * dedupe-cluster.spec.ts. Nothing here is timed with a fixed sleep: times are compared with the
 * instants around the calls that set them.
 */
describe('Throttle and debounce (dedupe)', () => {
  const instances = useDelayInstances('dedupe');
  const dedupeKey = (keyPrefix: string, topic: string, key: string) => `${keyPrefix}:dq:{${topic}}:dedupe:${key}`;

  describe('throttle', () => {
    it('keeps one job per key across three instances calling at once; every call answers with that job', async () => {
      const apps = await instances.start(3);
      const keys = ['a', 'b', 'c', 'd'];
      const calls: Array<Promise<ScheduleResult>> = [];
      for (let round = 0; round < 40; round++) {
        for (const [i, t] of apps.entries()) {
          for (const key of keys) {
            calls.push(t.queue.scheduleWithResult('throttled', { key, from: i, round }, { delay: 60_000, dedupe: { key, ttl: 60_000 } }));
          }
        }
      }
      const results = await Promise.all(calls);
      const byKey = new Map<string, ScheduleResult[]>();
      results.forEach((result, n) => {
        const key = keys[n % keys.length];
        byKey.set(key, [...(byKey.get(key) ?? []), result]);
      });
      for (const key of keys) {
        const answers = byKey.get(key)!;
        const created = answers.filter((answer) => answer.status === 'created');
        expect(created).toHaveLength(1);
        expect(new Set(answers.map((answer) => answer.id))).toEqual(new Set([created[0].id]));
        expect(answers.filter((answer) => answer.status === 'existing')).toHaveLength(answers.length - 1);
        expect(await instances.redis().get(dedupeKey(apps[0].keyPrefix, 'throttled', key))).toBe(created[0].id);
      }
      expect((await apps[1].queue.stats('throttled')).scheduled).toBe(keys.length);
    });

    it('answers existing after the job completed, until the ttl counted from the first call has passed', async () => {
      const [t] = await instances.start(1);
      const ran = deferred<string>();
      const consumer = t.queue.consume('once', (_payload, job) => ran.resolve(job.id));
      const ttl = 60_000;
      const first = await t.queue.scheduleWithResult('once', 1, { dedupe: { key: 'k', ttl } });
      expect(first.status).toBe('created');
      expect(await ran.promise).toBe(first.id);
      await waitFor(async () => (await t.queue.get('once', first.id)) === null, 5_000, 'the acknowledgement');
      const name = dedupeKey(t.keyPrefix, 'once', 'k');
      const left = await instances.redis().pttl(name);
      expect(await t.queue.scheduleWithResult('once', 2, { dedupe: { key: 'k', ttl } })).toEqual({ id: first.id, status: 'existing' });
      // A later call does not restart the ttl.
      expect(await instances.redis().pttl(name)).toBeLessThanOrEqual(left);
      await consumer.close();
      expect((await t.queue.stats('once')).scheduled).toBe(0);
    });

    it('creates the next job once the key has expired', async () => {
      const [t] = await instances.start(1);
      const first = await t.queue.scheduleWithResult('expiring', 1, { delay: 60_000, dedupe: { key: 'k', ttl: 200 } });
      await waitFor(
        async () => (await instances.redis().exists(dedupeKey(t.keyPrefix, 'expiring', 'k'))) === 0,
        5_000,
        'the key to expire',
      );
      const next = await t.queue.scheduleWithResult('expiring', 2, { delay: 60_000, dedupe: { key: 'k', ttl: 200 } });
      expect(next.status).toBe('created');
      expect(next.id).not.toBe(first.id);
    });

    it('frees the key when its job is cancelled', async () => {
      const [t] = await instances.start(1);
      const first = await t.queue.schedule('cancelled', 1, { delay: 60_000, dedupe: { key: 'k', ttl: 60_000 } });
      expect(await t.queue.cancel('cancelled', first)).toBe(true);
      const next = await t.queue.scheduleWithResult('cancelled', 2, { delay: 60_000, dedupe: { key: 'k', ttl: 60_000 } });
      expect(next.status).toBe('created');
      expect((await t.queue.get('cancelled', next.id))?.payload).toBe(2);
    });

    it('decides per job in scheduleMany, and keys are per topic', async () => {
      const [t] = await instances.start(1);
      const results = await t.queue.scheduleManyWithResult('many', [
        { payload: 1, delay: 60_000, dedupe: { key: 'x', ttl: 60_000 } },
        { payload: 2, delay: 60_000, dedupe: { key: 'x', ttl: 60_000 } },
        { payload: 3, delay: 60_000, dedupe: { key: 'y', ttl: 60_000 } },
        { payload: 4, delay: 60_000 },
      ]);
      expect(results.map((r) => r.status)).toEqual(['created', 'existing', 'created', 'created']);
      expect(results[1].id).toBe(results[0].id);
      expect((await t.queue.scheduleWithResult('other', 5, { delay: 60_000, dedupe: { key: 'x', ttl: 60_000 } })).status).toBe('created');
    });

    it('inside a transaction answers deferred and decides when the job reaches Redis after the commit', async () => {
      const [t] = await instances.start(1);
      const held = await t.queue.scheduleWithResult('tx', 0, { delay: 60_000, dedupe: { key: 'k', ttl: 60_000 } });
      const inside = await runInTransaction(() =>
        t.queue.scheduleWithResult('tx', 1, { delay: 60_000, dedupe: { key: 'k', ttl: 60_000 } }),
      );
      expect(inside.status).toBe('deferred');
      await runInTransaction(() => t.queue.schedule('tx', 2, { delay: 60_000, dedupe: { key: 'other', ttl: 60_000 } }));
      await waitFor(async () => (await t.queue.stats('tx')).scheduled === 2, 5_000, 'the committed job');
      expect(await t.queue.get('tx', inside.id)).toBeNull();
      expect((await t.queue.get('tx', held.id))?.payload).toBe(0);
    });
  });

  describe('debounce', () => {
    it('runs once, ttl after the last call, with its payload, whichever of three instances made the calls', async () => {
      const apps = await instances.start(3);
      const ttl = 3_000;
      const runs: Array<{ id: string; payload: number; at: number }> = [];
      const consumer = apps[2].queue.consume<number>(
        'debounced',
        (payload, job) => void runs.push({ id: job.id, payload, at: Date.now() }),
      );
      let last: { sentAt: number; answeredAt: number; result: ScheduleResult } | undefined;
      const results: ScheduleResult[] = [];
      for (let n = 0; n < 30; n++) {
        const sentAt = Date.now();
        const result = await apps[n % 3].queue.scheduleWithResult('debounced', n, { dedupe: { key: 'k', ttl, mode: 'debounce' } });
        last = { sentAt, answeredAt: Date.now(), result };
        results.push(result);
      }
      // Every call lands on the one waiting job: the first created it, the others restarted it.
      expect(results[0].status).toBe('created');
      expect(results.slice(1)).toEqual(results.slice(1).map(() => ({ id: results[0].id, status: 'replaced' })));
      const waiting = await apps[1].queue.get<number>('debounced', results[0].id);
      expect(waiting?.payload).toBe(29);
      // Due ttl after the last call reached Redis (the same host's clock; its TIME truncates to ms).
      const due = waiting!.scheduledAt!.getTime();
      expect(due).toBeGreaterThanOrEqual(last!.sentAt + ttl - 1);
      expect(due).toBeLessThanOrEqual(last!.answeredAt + ttl + 1);
      await waitFor(() => runs.length > 0, ttl + 10_000, 'the debounced run');
      await waitFor(async () => (await apps[0].queue.stats('debounced')).active === 0, 5_000, 'the acknowledgement');
      await consumer.close();
      expect(runs.map(({ id, payload }) => ({ id, payload }))).toEqual([{ id: results[0].id, payload: 29 }]);
      expect(runs[0].at).toBeGreaterThanOrEqual(due - 1);
    });

    it('starts a new period with a new job when called while the debounced job runs', async () => {
      const [t] = await instances.start(1);
      const started = deferred<string>();
      const finish = deferred();
      const runs: Array<[string, number]> = [];
      const consumer = t.queue.consume<number>(
        'running',
        async (payload, job) => {
          runs.push([job.id, payload]);
          started.resolve(job.id);
          if (payload === 1) await finish.promise;
        },
        { concurrency: 2 },
      );
      const first = await t.queue.scheduleWithResult('running', 1, { dedupe: { key: 'k', ttl: 1, mode: 'debounce' } });
      expect(await started.promise).toBe(first.id);
      const second = await t.queue.scheduleWithResult('running', 2, { dedupe: { key: 'k', ttl: 1, mode: 'debounce' } });
      expect(second.status).toBe('created');
      expect(second.id).not.toBe(first.id);
      await waitFor(() => runs.length === 2, 5_000, 'the second period');
      finish.resolve();
      await waitFor(async () => (await t.queue.stats('running')).active === 0, 5_000, 'the acknowledgements');
      await consumer.close();
      expect(runs).toEqual([
        [first.id, 1],
        [second.id, 2],
      ]);
    });

    it('replaces a prioritised job, which runs once with the last payload and leaves nothing queued', async () => {
      const [t] = await instances.start(1);
      const runs: Array<[string, number]> = [];
      const options = { priority: 3, dedupe: { key: 'k', ttl: 300, mode: 'debounce' as const } };
      const first = await t.queue.scheduleWithResult('prioritised', 1, options);
      const second = await t.queue.scheduleWithResult('prioritised', 2, options);
      expect(second).toEqual({ id: first.id, status: 'replaced' });
      // Consumed only now: a consumer already running would rightly run the first payload when the
      // second call comes more than the 300 ms window later (a stall of a loaded machine).
      const consumer = t.queue.consume<number>('prioritised', (payload, job) => void runs.push([job.id, payload]));
      await waitFor(() => runs.length > 0, 10_000, 'the debounced run');
      await waitFor(async () => (await t.queue.stats('prioritised')).active === 0, 5_000, 'the acknowledgement');
      await consumer.close();
      expect(runs).toEqual([[first.id, 2]]);
      const { scheduled, due, active } = await t.queue.stats('prioritised');
      expect({ scheduled, due, active }).toEqual({ scheduled: 0, due: 0, active: 0 });
    });

    it('replaces a job waiting for its group with the new payload and group', async () => {
      const [t] = await instances.start(1);
      const first = await t.queue.schedule('grouped', 1, { group: 'g1', dedupe: { key: 'k', ttl: 60_000, mode: 'debounce' } });
      const second = await t.queue.scheduleWithResult('grouped', 2, { group: 'g2', dedupe: { key: 'k', ttl: 60_000, mode: 'debounce' } });
      expect(second).toEqual({ id: first, status: 'replaced' });
      const job = await t.queue.get('grouped', first);
      expect({ payload: job?.payload, group: job?.group }).toEqual({ payload: 2, group: 'g2' });
      const { scheduled, grouped } = await t.queue.stats('grouped');
      expect({ scheduled, grouped }).toEqual({ scheduled: 0, grouped: 1 });
    });
  });

  describe('refusals', () => {
    const refusals: Array<[string, object, string, RegExp]> = [
      ['a key of blanks', { dedupe: { key: ' ', ttl: 1 } }, 'dedupe.key', /more than blanks/],
      ['a key with a quote', { dedupe: { key: 'a"b', ttl: 1 } }, 'dedupe.key', /cannot hold quotes/],
      ['a key too long', { dedupe: { key: 'k'.repeat(257), ttl: 1 } }, 'dedupe.key', /longer than 256/],
      ['a ttl of 0', { dedupe: { key: 'k', ttl: 0 } }, 'dedupe.ttl', /from 1 to 2592000000/],
      ['a fractional ttl', { dedupe: { key: 'k', ttl: 1.5 } }, 'dedupe.ttl', /whole number/],
      ['a ttl past 30 days', { dedupe: { key: 'k', ttl: 2_592_000_001 } }, 'dedupe.ttl', /30 days/],
      ['an unknown mode', { dedupe: { key: 'k', ttl: 1, mode: 'queue' } }, 'dedupe.mode', /'throttle', 'debounce'/],
      ['an unknown option', { dedupe: { key: 'k', ttl: 1, extend: true } }, 'dedupe.extend', /unknown option/],
      ['not an object', { dedupe: 'k' }, 'dedupe', /\{ key, ttl, mode\? \}/],
      ['an id', { id: 'x', dedupe: { key: 'k', ttl: 1 } }, 'id', /give one of them/],
      ['replace', { replace: true, dedupe: { key: 'k', ttl: 1 } }, 'replace', /mode: 'debounce'/],
      ['a delay in debounce mode', { delay: 5, dedupe: { key: 'k', ttl: 1, mode: 'debounce' } }, 'delay', /dedupe.ttl/],
      ['a time in debounce mode', { at: 5, dedupe: { key: 'k', ttl: 1, mode: 'debounce' } }, 'at', /dedupe.ttl/],
    ];
    let queue: DelayQueueService;
    beforeAll(async () => ([{ queue }] = await instances.start(1)));

    it.each(refusals)('refuses %s, naming the field, and writes nothing', async (_label, options, field, problem) => {
      const error = await rejectionOf(() => queue.schedule('refused', 1, options));
      expect(error).toBeInstanceOf(InvalidJobError);
      expect((error as InvalidJobError).field).toBe(field);
      expect((error as InvalidJobError).problem).toMatch(problem);
      const many = await rejectionOf(() => queue.scheduleMany('refused', [{ payload: 0 }, { payload: 1, ...options }]));
      expect((many as InvalidJobError).field).toBe(`jobs[1].${field}`);
      expect((await queue.stats('refused')).scheduled).toBe(0);
    });
  });
});
