import { decodeDedupe, dedupeKeyOf, encodeDedupe } from '../../../../lib/delay-queue/jobs/dedupe-spec.js';

describe('stored dedupe (dedupe-spec.ts)', () => {
  it('reads back what it stores, a key holding colons included', () => {
    for (const dedupe of [
      { key: 'product:7', ttl: 60_000, mode: 'throttle' as const },
      { key: 'chat:a:b', ttl: 1, mode: 'debounce' as const },
      { key: 'x', ttl: 2_592_000_000, mode: 'throttle' as const },
    ]) {
      const stored = encodeDedupe(dedupe);
      expect(decodeDedupe(stored)).toEqual(dedupe);
      expect(dedupeKeyOf(stored)).toBe(dedupe.key);
    }
  });

  it('reads nothing from text it did not write', () => {
    for (const text of ['', 't', 'x60000:k', 't:k', 'tabc:k', 'd60000', 't-1:k']) expect(decodeDedupe(text)).toBeUndefined();
  });
});
