import { HeldLockHandle, type HeldLockOperations } from '../../../lib/lock/held-lock-handle.js';
import { covers, HeldLockFrames, type SectionMode } from '../../../lib/lock/held-lock-frames.js';
import { MultiLockHandle } from '../../../lib/lock/multi-lock-handle.js';
import type { LockProtocol } from '../../../lib/lock/protocols/lock-protocol.interface.js';
import { LockContext } from '../../../lib/lock/lock-context.js';
import { FakeLockHandle } from './fake-lock-handle.js';

const serviceA = {};
const serviceB = {};

/** A held handle over a protocol stub that only names the lock: its timers are stopped at once. */
function held(name: string, owner: string, reentrant = true): HeldLockHandle {
  const protocol = { name, reentrancyKey: reentrant ? `owners:${name}` : undefined } as unknown as LockProtocol;
  const operations = {} as HeldLockOperations;
  const handle = new HeldLockHandle(protocol, owner, `${owner}/1`, '7', 60_000, false, performance.now(), operations);
  handle.stopTimers();
  return handle;
}

describe('HeldLockFrames: which modes a section hold covers', () => {
  it.each<[SectionMode, SectionMode, boolean]>([
    ['exclusive', 'exclusive', true],
    ['read', 'read', true],
    ['write', 'write', true],
    ['write', 'read', true],
    ['read', 'write', false],
    ['exclusive', 'read', false],
    ['exclusive', 'write', false],
    ['read', 'exclusive', false],
    ['write', 'exclusive', false],
  ])('a %s hold covers a %s section: %s', (heldMode, wanted, expected) => {
    expect(covers(heldMode, wanted)).toBe(expected);
  });
});

describe('HeldLockFrames: the covering check of decorator sections', () => {
  it('covers nothing outside any scope', () => {
    expect(HeldLockFrames.covering(serviceA, ['a'], 'exclusive')).toBeUndefined();
  });

  it('covers a nested section of the same service, key and mode with the enclosing hold', () => {
    const outer = new FakeLockHandle('a');
    HeldLockFrames.run(
      outer,
      () => {
        expect(HeldLockFrames.covering(serviceA, ['a'], 'exclusive')).toBe(outer);
        expect(HeldLockFrames.covering(serviceA, ['b'], 'exclusive')).toBeUndefined();
        expect(HeldLockFrames.covering(serviceB, ['a'], 'exclusive')).toBeUndefined();
      },
      { service: serviceA, names: ['a'], mode: 'exclusive' },
    );
  });

  it('lets a read section run inside a write hold, never a write section inside a read hold', () => {
    const write = new FakeLockHandle('w');
    HeldLockFrames.run(write, () => expect(HeldLockFrames.covering(serviceA, ['w'], 'read')).toBe(write), {
      service: serviceA,
      names: ['w'],
      mode: 'write',
    });
    const read = new FakeLockHandle('r');
    HeldLockFrames.run(read, () => expect(HeldLockFrames.covering(serviceA, ['r'], 'write')).toBeUndefined(), {
      service: serviceA,
      names: ['r'],
      mode: 'read',
    });
  });

  it('does not cover with a hold that is no longer held', () => {
    const outer = new FakeLockHandle('a');
    HeldLockFrames.run(
      outer,
      () => {
        outer.held = false;
        expect(HeldLockFrames.covering(serviceA, ['a'], 'exclusive')).toBeUndefined();
      },
      { service: serviceA, names: ['a'], mode: 'exclusive' },
    );
  });

  it('maps each name of a multi-key section to its own part, and covers any subset of them', () => {
    const [a, b, c] = ['a', 'b', 'c'].map((key) => new FakeLockHandle(key));
    const outer = new MultiLockHandle([a, b, c]);
    HeldLockFrames.run(
      outer,
      () => {
        expect(HeldLockFrames.covering(serviceA, ['b'], 'exclusive')).toBe(b);
        const pair = HeldLockFrames.covering(serviceA, ['c', 'a'], 'exclusive');
        expect(pair).toBeInstanceOf(MultiLockHandle);
        expect((pair as MultiLockHandle).parts).toEqual([c, a]);
        expect(HeldLockFrames.covering(serviceA, ['a', 'd'], 'exclusive')).toBeUndefined();
      },
      { service: serviceA, names: ['a', 'b', 'c'], mode: 'exclusive' },
    );
  });

  it('adds the keys of nested sections to the enclosing ones, and only for the scope of the nested run', () => {
    const a = new FakeLockHandle('a');
    const b = new FakeLockHandle('b');
    HeldLockFrames.run(
      a,
      () => {
        HeldLockFrames.run(
          b,
          () => {
            expect(HeldLockFrames.covering(serviceA, ['a', 'b'], 'exclusive')).toBeInstanceOf(MultiLockHandle);
          },
          { service: serviceA, names: ['b'], mode: 'exclusive' },
        );
        expect(HeldLockFrames.covering(serviceA, ['b'], 'exclusive')).toBeUndefined();
        expect(HeldLockFrames.covering(serviceA, ['a'], 'exclusive')).toBe(a);
      },
      { service: serviceA, names: ['a'], mode: 'exclusive' },
    );
  });

  it('keeps the sections of an outer scope visible inside a plain (using) scope, but a plain scope covers nothing itself', () => {
    const section = new FakeLockHandle('a');
    const plain = new FakeLockHandle('b');
    HeldLockFrames.run(
      section,
      () => {
        HeldLockFrames.run(plain, () => {
          expect(HeldLockFrames.covering(serviceA, ['a'], 'exclusive')).toBe(section);
          expect(HeldLockFrames.covering(serviceA, ['b'], 'exclusive')).toBeUndefined();
        });
      },
      { service: serviceA, names: ['a'], mode: 'exclusive' },
    );
  });
});

describe('HeldLockFrames: re-entrancy owners and the current handle', () => {
  it('knows the owner of each re-entrant part, inside the scope only', async () => {
    const handle = held('a', 'client:1');
    expect(HeldLockFrames.ownerOf('owners:a')).toBeUndefined();
    await HeldLockFrames.run(handle, async () => {
      await Promise.resolve();
      expect(HeldLockFrames.ownerOf('owners:a')).toBe('client:1');
      expect(HeldLockFrames.ownerOf('owners:b')).toBeUndefined();
    });
    expect(HeldLockFrames.ownerOf('owners:a')).toBeUndefined();
  });

  it('records every re-entrant part of a multi-key hold, and none for a kind that never re-enters', () => {
    const permit = held('permit', 'client:3', false);
    const handle = new MultiLockHandle([held('a', 'client:1'), held('b', 'client:2'), permit]);
    HeldLockFrames.run(handle, () => {
      expect(HeldLockFrames.ownerOf('owners:a')).toBe('client:1');
      expect(HeldLockFrames.ownerOf('owners:b')).toBe('client:2');
      expect(HeldLockFrames.ownerOf('owners:permit')).toBeUndefined();
    });
  });

  it('gives LockContext the innermost handle, and the outer one again after the inner scope', () => {
    const outer = held('outer', 'client:1');
    const inner = held('inner', 'client:1');
    expect(LockContext.current()).toBeUndefined();
    HeldLockFrames.run(outer, () => {
      HeldLockFrames.run(inner, () => {
        expect(LockContext.current()?.key).toBe('inner');
        expect(HeldLockFrames.ownerOf('owners:outer')).toBe('client:1');
      });
      expect(LockContext.current()).toMatchObject({ key: 'outer', fencingToken: '7' });
    });
  });
});
