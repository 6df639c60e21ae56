import { Injectable } from '@nestjs/common';
import { Redis } from 'ioredis';
import { InvalidOptionsError, OnDelayed, type Consumer, type JobContext, type RepeatInfo } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { advanceRepeatScript } from '../../lib/delay-queue/scripts/advance-repeat.lua.js';
import { repeatScriptKeys } from '../../lib/delay-queue/repeat/repeat-keys.js';
import { parseTickJobId } from '../../lib/delay-queue/jobs/tick-job-id.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';

const EVERY = 200;

/** Ticks run by a consumer of this process: tick ms per run, in run order. */
function tickRecorder(): { ticks: number[]; handler: (payload: unknown, job: JobContext) => void } {
  const ticks: number[] = [];
  return {
    ticks,
    handler: (_payload, job) => {
      const tick = parseTickJobId(job.id)!;
      expect(job.scheduledAt.getTime()).toBeGreaterThanOrEqual(tick.tickMs);
      ticks.push(tick.tickMs);
    },
  };
}

function expectConsecutive(ticks: readonly number[], every: number): void {
  const sorted = [...ticks].sort((a, b) => a - b);
  expect(new Set(sorted).size).toBe(sorted.length);
  for (let i = 1; i < sorted.length; i++) expect(sorted[i] - sorted[i - 1]).toBe(every);
}

const repeatLog: Array<{ payload: unknown; id: string }> = [];

@Injectable()
class NightlyReport {
  @OnDelayed('report.nightly', { repeat: { every: EVERY, payload: { kind: 'nightly' } } })
  run(payload: unknown, job: JobContext): void {
    repeatLog.push({ payload, id: job.id });
  }
}

describe('DelayQueueService.repeat', () => {
  let redis: Redis;
  const apps: DelayTestApp[] = [];
  const consumers: Consumer[] = [];

  beforeAll(() => {
    redis = new Redis(testRedisUrl());
  });
  afterAll(() => redis.quit());
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.close()));
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function app(keyPrefix?: string, providers: Parameters<typeof createDelayApp>[1] = []): Promise<DelayTestApp> {
    const created = await createDelayApp({ keyPrefix }, providers);
    apps.push(created);
    return created;
  }

  it('runs one job per tick, on ticks that are whole multiples of `every` (Redis time), in order', async () => {
    const t = await app();
    const info = await t.queue.repeat('beat', { every: EVERY });
    expect(info).toMatchObject({ topic: 'beat', id: 'beat', schedule: { every: EVERY }, catchUp: 'latest' });
    expect(info.nextRunAt.getTime() % EVERY).toBe(0);
    const { ticks, handler } = tickRecorder();
    consumers.push(t.queue.consume('beat', handler));
    await waitFor(() => ticks.length >= 6, 15_000, 'six ticks');
    expect(ticks[0]).toBe(info.nextRunAt.getTime());
    expectConsecutive(ticks, EVERY);
  });

  it('is an upsert: the same definition again changes nothing, another one replaces it', async () => {
    const t = await app();
    const first = await t.queue.repeat('upsert', { every: 60_000 }, { payload: { v: 1 } });
    const again = await t.queue.repeat('upsert', { every: 60_000 }, { payload: { v: 1 } });
    expect(again).toEqual(first);
    expect(await t.queue.stats('upsert')).toMatchObject({ scheduled: 1, due: 0 });

    const changed = await t.queue.repeat('upsert', { every: 30_000 }, { payload: { v: 2 }, catchUp: 'all' });
    expect(changed).toMatchObject({ schedule: { every: 30_000 }, catchUp: 'all' });
    expect(await t.queue.stats('upsert')).toMatchObject({ scheduled: 1, due: 0 });
    const queued = await t.queue.get('upsert', `repeat:upsert@${changed.nextRunAt.getTime()}`);
    expect(queued).toMatchObject({ payload: { v: 2 }, state: 'scheduled' });
    expect(await t.queue.listRepeats('upsert')).toEqual([changed]);
  });

  it('keeps several schedules of one topic apart by id', async () => {
    const t = await app();
    await t.queue.repeat('multi', { every: 60_000 }, { id: 'a' });
    await t.queue.repeat('multi', { cron: '0 2 * * *', timeZone: 'Europe/Warsaw' }, { id: 'b' });
    const listed = await t.queue.listRepeats('multi');
    expect(listed.map((info: RepeatInfo) => info.id).sort()).toEqual(['a', 'b']);
    expect(listed.find((info) => info.id === 'b')!.schedule).toEqual({ cron: '0 2 * * *', timeZone: 'Europe/Warsaw' });
  });

  it('removeRepeat deletes the schedule and its waiting tick; no further tick runs', async () => {
    const t = await app();
    await t.queue.repeat('removed', { every: EVERY });
    const { ticks, handler } = tickRecorder();
    consumers.push(t.queue.consume('removed', handler));
    await waitFor(() => ticks.length >= 2, 10_000, 'two ticks');
    expect(await t.queue.removeRepeat('removed')).toBe(true);
    expect(await t.queue.removeRepeat('removed')).toBe(false);
    const count = ticks.length;
    await sleep(4 * EVERY);
    expect(ticks.length).toBeLessThanOrEqual(count + 1); // a tick already claimed when it was removed may finish
    expect(await t.queue.listRepeats('removed')).toEqual([]);
    expect(await t.queue.stats('removed')).toEqual({ scheduled: 0, due: 0, active: 0, dead: 0 });
  });

  it('refuses bad schedules and options before writing anything, naming the option', async () => {
    const t = await app();
    await expect(t.queue.repeat('bad', { every: 5 })).rejects.toThrow(InvalidOptionsError);
    await expect(t.queue.repeat('bad', { every: 1000, cron: '* * * * *' } as never)).rejects.toThrow(/exactly one/);
    await expect(t.queue.repeat('bad', { cron: 'not a cron' })).rejects.toThrow(/schedule\.cron/);
    await expect(t.queue.repeat('bad', { cron: '* * * * *', timeZone: 'Mars/Olympus' })).rejects.toThrow(/schedule\.timeZone/);
    await expect(t.queue.repeat('bad', { every: 1000 }, { catchUp: 'some' as never })).rejects.toThrow(/catchUp/);
    expect(await t.queue.listRepeats('bad')).toEqual([]);
  });

  it('@OnDelayed({ repeat }) registers the schedule at bootstrap and runs its ticks with the payload', async () => {
    repeatLog.length = 0;
    const t = await app(undefined, [NightlyReport]);
    await waitFor(() => repeatLog.length >= 3, 15_000, 'three ticks');
    expect(repeatLog[0].payload).toEqual({ kind: 'nightly' });
    expectConsecutive(
      repeatLog.map((entry) => parseTickJobId(entry.id)!.tickMs),
      EVERY,
    );
    expect(await t.queue.listRepeats('report.nightly')).toHaveLength(1);
  });

  it('an advance run twice (a re-sent command) enqueues one job', async () => {
    const t = await app();
    const info = await t.queue.repeat('twice', { every: 60_000 });
    const keys = repeatScriptKeys(new RedisKeySpace(t.keyPrefix).topic('twice'));
    const stored = (await redis.hget(keys[6], 'twice'))!;
    const tick = info.nextRunAt.getTime();
    const tail = (JSON.parse(stored.slice(40)) as { t: string }).t;
    const args = ['twice', stored.slice(0, 40), tick, tick + 60_000, tail, '0'];
    expect(await advanceRepeatScript.run(redis, keys, args)).toBe(1);
    expect(await advanceRepeatScript.run(redis, keys, args)).toBe(0);
    expect(await t.queue.stats('twice')).toMatchObject({ scheduled: 2 });
    expect((await t.queue.listRepeats('twice'))[0].nextRunAt.getTime()).toBe(tick + 60_000);
  });
});
