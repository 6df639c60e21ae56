import { Injectable } from '@nestjs/common';
import { InvalidOptionsError, OnDelayed, type JobContext, type RepeatInfo } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { MISSED_TICK_AFTER_MS } from '../../lib/delay-queue/repeat/tick-calendar.js';
import { TopicInspector } from '../../lib/delay-queue/topic-inspector.js';
import { advanceRepeatScript } from '../../lib/delay-queue/scripts/advance-repeat.lua.js';
import { parseTickJobId } from '../../lib/delay-queue/jobs/tick-job-id.js';
import { uniquePrefix, useRawRedis } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';
import { createDelayApp, useClosedAfterEach, type DelayTestApp } from './support/delay-test-app.js';
import { topicStats } from '../support/topic-stats.js';

const EVERY = 200;
/** A stop long enough for ticks to count as missed (not merely late). */
const DOWN_MS = MISSED_TICK_AFTER_MS + 8 * EVERY;

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
  const redis = useRawRedis();
  const { apps, consumers } = useClosedAfterEach();

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
    // The consumer that claims a tick records it as the last run and queues the next one, in one step.
    const [listed] = await t.queue.listRepeats('beat');
    expect(listed.lastRunAt!.getTime()).toBe(listed.nextRunAt.getTime() - EVERY);
    expect(listed.lastRunAt!.getTime()).toBeGreaterThanOrEqual(Math.max(...ticks));
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
    // The read side for add-ons (the dashboard) lists the same, soonest tick first.
    expect(await t.app.get(TopicInspector).schedules('multi')).toEqual(listed);
    expect(listed[0].nextRunAt.getTime()).toBeLessThanOrEqual(listed[1].nextRunAt.getTime());
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
    expect(await t.queue.stats('removed')).toEqual(topicStats());
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

  /** Redis's clock (the one ticks follow), in ms. */
  async function serverNow(): Promise<number> {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /**
   * Runs a schedule on one application, stops it (every instance down), waits `downMs`, then starts
   * another that calls repeat() again and consumes. Returns the last tick before the stop, the server
   * time of the restart, and the ticks run after it.
   */
  async function downtime(topic: string, catchUp: 'none' | 'latest' | 'all', downMs: number) {
    const keyPrefix = uniquePrefix('dq');
    const before = await app(keyPrefix);
    await before.queue.repeat(topic, { every: EVERY }, { catchUp });
    const first = tickRecorder();
    const consumer = before.queue.consume(topic, first.handler);
    await waitFor(() => first.ticks.length >= 2, 10_000, 'two ticks before the stop');
    await consumer.close();
    await before.close();
    const lastBefore = Math.max(...first.ticks);
    await sleep(downMs);
    const after = await app(keyPrefix);
    const restartedAt = await serverNow();
    await after.queue.repeat(topic, { every: EVERY }, { catchUp });
    const upsertedAt = await serverNow();
    const second = tickRecorder();
    consumers.push(after.queue.consume(topic, second.handler));
    return { lastBefore, restartedAt, upsertedAt, ticks: second.ticks };
  }

  it("catchUp 'latest' (the default) runs the most recent missed tick once after every instance was down, then goes on", async () => {
    const { lastBefore, restartedAt, upsertedAt, ticks } = await downtime('catchup.latest', 'latest', DOWN_MS);
    await waitFor(() => ticks.length >= 3, 10_000, 'three ticks after the restart');
    // The first run is the latest tick already past when repeat() ran again: none of the older missed ones.
    expect(ticks[0]).toBeGreaterThanOrEqual(Math.floor(restartedAt / EVERY) * EVERY);
    expect(ticks[0]).toBeLessThanOrEqual(upsertedAt);
    expect(ticks[0]).toBeGreaterThan(lastBefore + EVERY);
    expectConsecutive(ticks, EVERY);
  });

  it("catchUp 'none' skips the missed ticks and resumes at the next tick", async () => {
    const { restartedAt, ticks } = await downtime('catchup.none', 'none', DOWN_MS);
    await waitFor(() => ticks.length >= 2, 10_000, 'two ticks after the restart');
    expect(ticks.filter((tick) => tick <= restartedAt)).toEqual([]);
    expectConsecutive(ticks, EVERY);
  });

  it("catchUp 'all' runs every missed tick, oldest first, then goes on", async () => {
    const { lastBefore, restartedAt, ticks } = await downtime('catchup.all', 'all', DOWN_MS);
    await waitFor(() => ticks.filter((tick) => tick > restartedAt).length >= 1, 10_000, 'a tick after the restart');
    expect(ticks[0]).toBe(lastBefore + EVERY);
    expect(ticks.filter((tick) => tick <= restartedAt).length).toBeGreaterThanOrEqual(7);
    expectConsecutive(ticks, EVERY);
  });

  it('a cancelled tick job is followed by the next tick (the periodic check), not by a stopped schedule', async () => {
    const t = await app();
    const info = await t.queue.repeat('cancelled.tick', { every: 60_000 });
    expect(await t.queue.cancel('cancelled.tick', `repeat:cancelled.tick@${info.nextRunAt.getTime()}`)).toBe(true);
    await waitFor(
      async () => (await t.queue.listRepeats('cancelled.tick'))[0].nextRunAt.getTime() === info.nextRunAt.getTime() + 60_000,
      15_000,
      'the next tick to be queued',
    );
    expect(await t.queue.stats('cancelled.tick')).toMatchObject({ scheduled: 1 });
  });

  it('an advance run twice (a re-sent command) enqueues one job', async () => {
    const t = await app();
    const info = await t.queue.repeat('twice', { every: 60_000 });
    const keys = new RedisKeySpace(t.keyPrefix).topic('twice');
    const stored = (await redis.hget(keys.repeats, 'twice'))!;
    const tick = info.nextRunAt.getTime();
    const tail = (JSON.parse(stored.slice(40)) as { t: string }).t;
    const args = {
      scheduleId: 'twice',
      fingerprint: stored.slice(0, 40),
      expectedTick: tick,
      nextTick: String(tick + 60_000),
      tail,
      dropStale: false,
      claimed: false,
      limit: '',
      startDate: '',
      endDate: '',
    };
    expect(await advanceRepeatScript.call(redis, keys, args)).toBe('advanced');
    expect(await advanceRepeatScript.call(redis, keys, args)).toBe('unchanged');
    expect(await t.queue.stats('twice')).toMatchObject({ scheduled: 2 });
    expect((await t.queue.listRepeats('twice'))[0].nextRunAt.getTime()).toBe(tick + 60_000);
  });
});
