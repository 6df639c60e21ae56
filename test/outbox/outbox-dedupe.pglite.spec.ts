import { jest } from '@jest/globals';
import { holdsWithin, waitFor } from '../support/timing.js';
import { usePgliteOutbox } from './support/pglite-outbox.js';

jest.setTimeout(120_000);

/**
 * Throttle and debounce through the transactional outbox: the dedupe travels in the job's row (its
 * header) and is decided when the row's write reaches Redis, by the relay's fenced write.
 */
describe('throttle and debounce through the outbox (PGlite)', () => {
  const { app, runs, inTx } = usePgliteOutbox('pglite-dedupe', 'SELECT 1', ['dedupe.throttle', 'dedupe.debounce']);
  /** The payloads run for `mode`, in run order. */
  const ran = (mode: string) => runs.map((run) => run.payload as { mode: string; n: number }).filter((p) => p.mode === mode);

  it('a throttle committed three times makes one job; the calls answer deferred', async () => {
    const results = [];
    for (let n = 1; n <= 3; n++) {
      results.push(
        await inTx(() => app.queue.scheduleWithResult('dedupe.throttle', { mode: 'throttle', n }, { dedupe: { key: 'k', ttl: 60_000 } })),
      );
    }
    expect(results.map((r) => r.status)).toEqual(['deferred', 'deferred', 'deferred']);
    await waitFor(() => ran('throttle').length > 0 || undefined, 30_000, 'the throttled job');
    expect(await holdsWithin(() => ran('throttle').length > 1, 1_500)).toBe(false);
    expect(ran('throttle').map((p) => p.n)).toEqual([1]);
  });

  it('a debounce committed three times runs once, with the last payload', async () => {
    for (let n = 1; n <= 3; n++) {
      await inTx(() =>
        app.queue.schedule('dedupe.debounce', { mode: 'debounce', n }, { dedupe: { key: 'k', ttl: 2_000, mode: 'debounce' } }),
      );
    }
    await waitFor(() => ran('debounce').length > 0 || undefined, 30_000, 'the debounced job');
    expect(await holdsWithin(() => ran('debounce').length > 1, 1_500)).toBe(false);
    expect(ran('debounce').map((p) => p.n)).toEqual([3]);
  });
});
