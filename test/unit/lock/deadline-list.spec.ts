import { DeadlineList } from '../../../lib/lock/deadline-list.js';
import { AcquireOptionsResolver } from '../../../lib/lock/resolve-acquire-options.js';
import { InvalidOptionsError } from '../../../lib/core/errors/invalid-options.error.js';
import { sleep, waitFor } from '../../support/timing.js';

describe('DeadlineList', () => {
  it('runs each callback once its deadline passes, never more than 1 ms early, in any order of adding', async () => {
    const list = new DeadlineList(false);
    const fired: Array<{ name: string; early: number }> = [];
    const start = performance.now();
    const add = (name: string, after: number) => {
      const at = start + after;
      list.add(at, () => fired.push({ name, early: at - performance.now() }));
    };
    add('c', 90);
    add('a', 30);
    add('b', 60);
    await waitFor(() => fired.length === 3, 5_000, 'all three deadlines');
    expect(fired.map((f) => f.name)).toEqual(['a', 'b', 'c']);
    for (const f of fired) expect(f.early).toBeLessThan(1);
  });

  it('does not run a cancelled callback, whether it is first in line or not', async () => {
    const list = new DeadlineList(false);
    const fired: string[] = [];
    const now = performance.now();
    const first = list.add(now + 20, () => fired.push('first'));
    const middle = list.add(now + 25, () => fired.push('middle'));
    list.add(now + 30, () => fired.push('last'));
    list.cancel(middle);
    list.cancel(first);
    list.cancel(first); // twice: no effect
    await waitFor(() => fired.length === 1, 5_000, 'the last deadline');
    await sleep(50);
    expect(fired).toEqual(['last']);
  });

  it('keeps working after many entries were cancelled out of order', async () => {
    const list = new DeadlineList(false);
    const now = performance.now();
    // Cancelled behind one that stays in front, so they pile up and are compacted.
    const keep = list.add(now + 60_000, () => undefined);
    const fired: number[] = [];
    for (let i = 0; i < 5_000; i++) {
      const entry = list.add(now + 1_000 + i, () => fired.push(i));
      if (i % 1_000 !== 0) list.cancel(entry);
    }
    list.add(now + 10, () => fired.push(-1));
    await waitFor(() => fired.length === 6, 10_000, 'the deadlines left');
    expect(fired).toEqual([-1, 0, 1_000, 2_000, 3_000, 4_000]);
    list.cancel(keep);
  });
});

describe('AcquireOptionsResolver', () => {
  const defaults = { waitTimeout: 5_000, leaseTime: 30_000, watchdog: true, fair: false, syncReplicas: undefined };

  it('resolves one options object once, and again when one of its fields changed', () => {
    const resolver = new AcquireOptionsResolver(defaults);
    const options: { leaseTime?: number; waitTimeout?: number } = { leaseTime: 1_000 };
    const first = resolver.resolve(options);
    expect(resolver.resolve(options)).toBe(first);
    expect(first).toMatchObject({ leaseTime: 1_000, watchdog: false, waitTimeout: 5_000 });
    options.waitTimeout = 0;
    expect(resolver.resolve(options)).toMatchObject({ leaseTime: 1_000, waitTimeout: 0 });
    expect(resolver.resolve(undefined)).toMatchObject({ leaseTime: 30_000, watchdog: true });
  });

  it('resolves a try (tryAcquire, tryRead, tryWrite) from the same cache, never waiting', () => {
    const resolver = new AcquireOptionsResolver(defaults);
    const options = { leaseTime: 1_000, waitTimeout: 2_000 };
    const waiting = resolver.resolve(options);
    const trying = resolver.resolve(options, false);
    expect(trying).toMatchObject({ leaseTime: 1_000, waitTimeout: 0 });
    expect(waiting).toMatchObject({ leaseTime: 1_000, waitTimeout: 2_000 });
    expect(resolver.resolve(options, false)).toBe(trying);
    expect(resolver.resolve(options)).toBe(waiting);
    expect(resolver.resolve(undefined, false)).toMatchObject({ leaseTime: 30_000, waitTimeout: 0 });
    expect(resolver.resolve(undefined, false)).toBe(resolver.resolve(undefined, false));
  });

  it('refuses a bad value every time, also in an object resolved before', () => {
    const resolver = new AcquireOptionsResolver(defaults);
    const options: { leaseTime?: number } = { leaseTime: 1_000 };
    resolver.resolve(options);
    options.leaseTime = 1;
    expect(() => resolver.resolve(options)).toThrow(InvalidOptionsError);
    expect(() => resolver.resolve(options)).toThrow(InvalidOptionsError);
  });
});
