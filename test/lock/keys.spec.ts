import { InvalidLockKeyError, InvalidOptionsError, LockService } from '../../lib/index.js';
import { escapeKeyPart } from '../../lib/core/keys/escape-key-part.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { useLockApp } from '../support/test-app.js';

describe('lock keys', () => {
  const lockApp = useLockApp();
  let locks: LockService;
  beforeAll(() => (locks = lockApp.locks()));

  it('escapes braces so a name can never open or close the hash tag', () => {
    const keys = new RedisKeySpace('rl').lock('a}b{c');
    expect(keys.owners).toBe('rl:lock:{a%7Db%7Bc}');
    expect(keys.fence).toBe('rl:lock:{a%7Db%7Bc}:fence');
    // The escape character is itself escaped, so distinct names never collide.
    expect(escapeKeyPart('%7B')).not.toBe(escapeKeyPart('{'));
  });

  it.each([
    ['empty', ''],
    ['too long', 'x'.repeat(1025)],
    ['not a string', 42],
    ['a lone surrogate', 'a\uD800b'],
  ])('rejects a %s key with InvalidLockKeyError and writes nothing', async (_label, key) => {
    await expect(locks.acquire(key as string)).rejects.toBeInstanceOf(InvalidLockKeyError);
    await expect(locks.tryAcquire(key as string)).rejects.toBeInstanceOf(InvalidLockKeyError);
  });

  it.each(['with {braces}', 'line\nbreak', 'ünïcødé ✓', '__proto__', 'x'.repeat(1024)])('locks odd but valid names: %j', async (name) => {
    const lock = await locks.acquire(name);
    expect(await locks.isLocked(name)).toBe(true);
    await lock.release();
    expect(await locks.isLocked(name)).toBe(false);
  });

  it.each<[string, object]>([
    ['negative waitTimeout', { waitTimeout: -1 }],
    ['NaN leaseTime', { leaseTime: Number.NaN }],
    ['Infinity leaseTime', { leaseTime: Infinity }],
    ['string waitTimeout', { waitTimeout: '10' }],
    ['a signal that is not one', { signal: {} }],
  ])('rejects %s with InvalidOptionsError', async (_label, options) => {
    await expect(locks.acquire('opts', options)).rejects.toBeInstanceOf(InvalidOptionsError);
    expect(await locks.isLocked('opts')).toBe(false);
  });
});
