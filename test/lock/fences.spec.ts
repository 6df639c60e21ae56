import type { LockHandle, LockService } from '../../lib/index.js';
import { rawRedis, useLockServicePair } from '../support/test-app.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

/**
 * Fencing counters: bounded in Redis (each expires some time after its last grant) and never going
 * back for a key, even when the counter itself is lost (expiry, FLUSHALL, a restart without
 * persistence, eviction) or rolled back (failover to a replica that had not seen the last grants).
 */
describe('fencing counters', () => {
  const LEASE = 2_000;
  const { keyPrefix, a, b } = useLockServicePair('fence', { lock: { leaseTime: LEASE } });
  const redis = rawRedis();
  afterAll(() => redis.quit());

  /** The longest a fencing counter may outlive its last grant: an hour, or two leases if longer. */
  const RETENTION_BOUND_MS = Math.max(3_600_000, 2 * LEASE);

  type Kind = { name: string; fenceKey: (n: string) => string; take: (s: LockService, n: string) => Promise<LockHandle> };
  const kinds: Kind[] = [
    { name: 'plain', fenceKey: (n) => new RedisKeySpace(keyPrefix).lock(n).fence, take: (s, n) => s.acquire(n, { waitTimeout: 10_000 }) },
    {
      name: 'fair',
      fenceKey: (n) => new RedisKeySpace(keyPrefix).lock(n).fence,
      take: (s, n) => s.acquire(n, { fair: true, waitTimeout: 10_000 }),
    },
    {
      name: 'read',
      fenceKey: (n) => new RedisKeySpace(keyPrefix).lock(n).fence,
      take: (s, n) => s.readWrite(n).read({ waitTimeout: 10_000 }),
    },
    {
      name: 'write',
      fenceKey: (n) => new RedisKeySpace(keyPrefix).lock(n).fence,
      take: (s, n) => s.readWrite(n).write({ waitTimeout: 10_000 }),
    },
    {
      name: 'semaphore',
      fenceKey: (n) => new RedisKeySpace(keyPrefix).semaphore(n).fence,
      take: (s, n) => s.semaphore(n, 2).acquire({ waitTimeout: 10_000 }),
    },
  ];

  /** Takes and releases `name` `times` times, alternating services; returns the tokens in order. */
  async function takeTurns(kind: Kind, name: string, times: number): Promise<bigint[]> {
    const tokens: bigint[] = [];
    for (let i = 0; i < times; i++) {
      const lock = await kind.take(i % 2 === 0 ? a : b, name);
      tokens.push(BigInt(lock.fencingToken));
      await lock.release();
    }
    return tokens;
  }

  const max = (values: bigint[]) => values.reduce((m, v) => (v > m ? v : m), 0n);

  it('gives every fencing counter of 2,000 distinct lock names a TTL bounded by the retention', async () => {
    const names = Array.from({ length: 2_000 }, (_, i) => `visitor-${i}`);
    for (let i = 0; i < names.length; i += 100) {
      await Promise.all(
        names.slice(i, i + 100).map(async (name, j) => {
          const lock = await kinds[j % kinds.length].take(a, name);
          await lock.release();
        }),
      );
    }
    const pipeline = redis.pipeline();
    names.forEach((name, j) => pipeline.pttl(kinds[j % kinds.length].fenceKey(name)));
    const ttls = (await pipeline.exec())!.map(([error, ttl]) => (error ? error : ttl));
    const unbounded = ttls.filter((ttl) => typeof ttl !== 'number' || ttl <= 0 || ttl > RETENTION_BOUND_MS);
    expect({ counters: ttls.length, unbounded: unbounded.length, sample: unbounded.slice(0, 3) }).toEqual({
      counters: 2_000,
      unbounded: 0,
      sample: [],
    });
  }, 60_000);

  it(
    'hands out decimal tokens that fit a signed 64-bit column, exact in Lua and JS numbers (below 2^53), ' + 'and grow across holders',
    async () => {
      for (const kind of kinds) {
        const tokens = await takeTurns(kind, `grow-${kind.name}`, 4);
        for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
        for (const token of tokens) {
          expect(token).toBeGreaterThan(0n);
          expect(token).toBeLessThan(2n ** 53n);
          expect(Number(token).toString()).toBe(token.toString());
        }
      }
    },
  );

  it.each(['plain', 'fair', 'read', 'write', 'semaphore'])(
    '%s: the next token is larger than every earlier one after the counter is deleted (FLUSHALL, restart, eviction)',
    async (kindName) => {
      const kind = kinds.find((k) => k.name === kindName)!;
      const name = `lost-${kind.name}`;
      const before = await takeTurns(kind, name, 3);
      expect(await redis.del(kind.fenceKey(name))).toBe(1);
      const [after] = await takeTurns(kind, name, 1);
      expect(after).toBeGreaterThan(max(before));
    },
  );

  it.each(['plain', 'fair', 'read', 'write', 'semaphore'])(
    '%s: the next token is larger than every earlier one after the counter goes back (failover to a lagging replica)',
    async (kindName) => {
      const kind = kinds.find((k) => k.name === kindName)!;
      const name = `rolled-back-${kind.name}`;
      const before = await takeTurns(kind, name, 3);
      // The replica saw the first grant only.
      await redis.set(kind.fenceKey(name), before[0].toString());
      const [after] = await takeTurns(kind, name, 1);
      expect(after).toBeGreaterThan(max(before));
    },
  );

  it('a re-entry into a hold whose counter was lost still gets a real token, larger than all before', async () => {
    const before = await takeTurns(kinds[0], 'reentered', 2);
    await a.using('reentered', async (outer) => {
      await redis.del(kinds[0].fenceKey('reentered'));
      const inner = await a.acquire('reentered');
      try {
        expect(BigInt(inner.fencingToken)).toBeGreaterThan(max(before));
        expect(BigInt(outer.fencingToken)).toBeGreaterThan(max(before));
      } finally {
        await inner.release();
      }
    });
  });
});
