import { DEBOUNCE_KEY_GRACE_MS } from '../../lib/delay-queue/scripts/dedupe-lua-snippet.js';
import { useDelayInstances } from './support/delay-instances.js';

const HOUR = 3_600_000;

/**
 * A debounce key lives until DEBOUNCE_KEY_GRACE_MS past its job's due time, and `reschedule()` moves
 * that with the job (docs/delayed-jobs.md, Throttle and debounce, Limits): a job moved later keeps its
 * key while it waits, so a call then still replaces it rather than starting a second job.
 */
describe('a debounced job rescheduled', () => {
  const instances = useDelayInstances('debounce-reschedule');

  it.each([
    ['a plain job', undefined],
    ['a job of a group', 'g1'],
  ])('%s: its key lives until the grace past the new due time, and the next call replaces it', async (_label, group) => {
    const [t] = await instances.start(1);
    const topic = `debounce-reschedule.${group ?? 'plain'}`;
    const key = `${t.keyPrefix}:dq:{${topic}}:dedupe:k`;
    const dedupe = { key: 'k', ttl: 1_000, mode: 'debounce' as const };
    const first = await t.queue.scheduleWithResult(topic, 'v1', { dedupe, ...(group ? { group } : {}) });
    expect(await instances.redis().pttl(key)).toBeLessThanOrEqual(1_000 + DEBOUNCE_KEY_GRACE_MS);

    expect(await t.queue.reschedule(topic, first.id, { delay: 3 * HOUR })).toBe(true);
    const pttl = await instances.redis().pttl(key);
    expect(pttl).toBeGreaterThan(3 * HOUR + DEBOUNCE_KEY_GRACE_MS - 60_000);
    expect(pttl).toBeLessThanOrEqual(3 * HOUR + DEBOUNCE_KEY_GRACE_MS);

    // Moved earlier: the key follows down as well.
    expect(await t.queue.reschedule(topic, first.id, { delay: 10 * 60_000 })).toBe(true);
    expect(await instances.redis().pttl(key)).toBeLessThanOrEqual(10 * 60_000 + DEBOUNCE_KEY_GRACE_MS);

    const second = await t.queue.scheduleWithResult(topic, 'v2', { dedupe, ...(group ? { group } : {}) });
    expect(second).toEqual({ id: first.id, status: 'replaced' });
    expect((await t.queue.get(topic, first.id))?.payload).toBe('v2');
  });

  it('leaves a throttle key on its own ttl', async () => {
    const [t] = await instances.start(1);
    const topic = 'throttle-reschedule';
    const key = `${t.keyPrefix}:dq:{${topic}}:dedupe:k`;
    const first = await t.queue.scheduleWithResult(topic, 'v1', { delay: 60_000, dedupe: { key: 'k', ttl: 5_000 } });
    expect(await t.queue.reschedule(topic, first.id, { delay: 3 * HOUR })).toBe(true);
    expect(await instances.redis().pttl(key)).toBeLessThanOrEqual(5_000);
  });
});
