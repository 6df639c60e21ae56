import { acquireAllOrNothing, lockNamesOf } from '../../../lib/lock/multi-key-acquire.js';
import type { LockHandle } from '../../../lib/lock/interfaces/lock-handle.interface.js';
import { FakeLockHandle } from './fake-lock-handle.js';

describe('lockNamesOf: the order several locks are taken in', () => {
  it('keeps a single key as it is', () => {
    expect(lockNamesOf('b:1')).toEqual(['b:1']);
  });

  it('sorts several keys and drops repeats, so any two orders of the same keys agree', () => {
    expect(lockNamesOf(['b', 'a', 'c', 'a'])).toEqual(['a', 'b', 'c']);
    expect(lockNamesOf(['c', 'b', 'a'])).toEqual(lockNamesOf(['a', 'c', 'b']));
  });

  it('gives an empty list for no keys (callers refuse it)', () => {
    expect(lockNamesOf([])).toEqual([]);
  });
});

describe('acquireAllOrNothing', () => {
  /** Steps that take each key from `free`, in call order, and record what was released. */
  function steps(free: ReadonlySet<string>, failOn?: string) {
    const taken: string[] = [];
    const released: string[] = [];
    const waits: Array<number | undefined> = [];
    return {
      taken,
      released,
      waits,
      acquireOne: async (key: string, remaining: number | undefined): Promise<LockHandle | null> => {
        waits.push(remaining);
        if (key === failOn) throw new Error(`cannot take ${key}`);
        if (!free.has(key)) return null;
        taken.push(key);
        return new FakeLockHandle(key);
      },
      releaseUnused: async (parts: readonly LockHandle[]) => {
        released.push(...parts.map((part) => part.key));
      },
    };
  }

  it('takes every key in the given order and hands back the parts in that order', async () => {
    const s = steps(new Set(['a', 'b', 'c']));
    const parts = await acquireAllOrNothing(['a', 'b', 'c'], 1_000, s);
    expect(parts?.map((part) => part.key)).toEqual(['a', 'b', 'c']);
    expect(s.taken).toEqual(['a', 'b', 'c']);
    expect(s.released).toEqual([]);
  });

  it('stops at the first key that is not free, lets go of the ones taken, and resolves null', async () => {
    const s = steps(new Set(['a', 'c']));
    await expect(acquireAllOrNothing(['a', 'b', 'c'], 1_000, s)).resolves.toBeNull();
    expect(s.taken).toEqual(['a']);
    expect(s.released).toEqual(['a']);
  });

  it('lets go of the keys taken and rethrows the same error when one acquire throws', async () => {
    const s = steps(new Set(['a', 'b', 'c']), 'b');
    await expect(acquireAllOrNothing(['a', 'b', 'c'], 1_000, s)).rejects.toThrow('cannot take b');
    expect(s.released).toEqual(['a']);
  });

  it('gives each key what is left of one wait, never less than 0, and no bound when there is none', async () => {
    const bounded = steps(new Set(['a', 'b']));
    await acquireAllOrNothing(['a', 'b'], 50, bounded);
    expect(bounded.waits).toHaveLength(2);
    for (const wait of bounded.waits) {
      expect(wait).toBeGreaterThanOrEqual(0);
      expect(wait).toBeLessThanOrEqual(50);
    }
    expect(bounded.waits[1]!).toBeLessThanOrEqual(bounded.waits[0]!);

    const unbounded = steps(new Set(['a', 'b']));
    await acquireAllOrNothing(['a', 'b'], undefined, unbounded);
    expect(unbounded.waits).toEqual([undefined, undefined]);
  });
});
