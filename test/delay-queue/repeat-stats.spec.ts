import { TopicShards } from '../../lib/delay-queue/jobs/topic-shards.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import { topicStats } from '../support/topic-stats.js';

describe('DelayQueueService.stats counts repeatable schedules', () => {
  const apps: DelayTestApp[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function app(options: Parameters<typeof createDelayApp>[0] = {}): Promise<DelayTestApp> {
    const created = await createDelayApp(options);
    apps.push(created);
    return created;
  }

  it('counts a schedule from repeat() and no longer once removeRepeat() took it away', async () => {
    const t = await app();
    expect(await t.queue.stats('counted')).toEqual(topicStats());

    await t.queue.repeat('counted', { every: 60_000 });
    // The schedule, and the one tick it has queued.
    expect(await t.queue.stats('counted')).toEqual(topicStats({ scheduled: 1, schedules: 1 }));
    // An upsert of the same id is still one schedule; another id is a second one.
    await t.queue.repeat('counted', { every: 60_000 });
    await t.queue.repeat('counted', { cron: '0 2 * * *', timeZone: 'Europe/Warsaw' }, { id: 'nightly' });
    expect(await t.queue.stats('counted')).toEqual(topicStats({ scheduled: 2, schedules: 2 }));

    expect(await t.queue.removeRepeat('counted', 'nightly')).toBe(true);
    expect(await t.queue.stats('counted')).toEqual(topicStats({ scheduled: 1, schedules: 1 }));
    expect(await t.queue.removeRepeat('counted')).toBe(true);
    expect(await t.queue.stats('counted')).toEqual(topicStats());
  });

  it('adds up the schedules of a sharded topic over its shards', async () => {
    const t = await app({ delayQueue: { topics: { spread: { shards: 4 } } } });
    const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    for (const id of ids) await t.queue.repeat('spread', { every: 60_000 }, { id });
    expect(await t.queue.stats('spread')).toEqual(topicStats({ scheduled: ids.length, schedules: ids.length }));
    // The schedules live on several shards, so the count is a sum over shards.
    const shards = t.app.get(TopicShards);
    expect(new Set(ids.map((id) => shards.forSchedule('spread', id).jobs)).size).toBeGreaterThan(1);
    expect((await t.queue.listRepeats('spread')).map((info) => info.id).sort()).toEqual(ids);

    for (const id of ids.slice(0, 3)) await t.queue.removeRepeat('spread', id);
    expect(await t.queue.stats('spread')).toMatchObject({ schedules: ids.length - 3, scheduled: ids.length - 3 });
  });
});
