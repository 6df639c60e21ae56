import { exited, spawnFixture } from '../support/child-process.js';
import { rawRedis, testRedisUrl, uniquePrefix } from '../support/test-app.js';

describe('mutual exclusion across processes', () => {
  it('keeps a read-modify-write counter exact across 4 processes, fencing tokens strictly increasing', async () => {
    const prefix = uniquePrefix('mx');
    const processes = 4;
    const rounds = 150;
    const workers = Array.from({ length: processes }, () => spawnFixture('counter-worker.ts', [testRedisUrl(), prefix, String(rounds)]));
    await Promise.all(workers.map(exited));

    const redis = rawRedis();
    try {
      expect(Number(await redis.get(`${prefix}:counter`))).toBe(processes * rounds);
      const tokens = (await redis.lrange(`${prefix}:tokens`, 0, -1)).map(BigInt);
      expect(tokens).toHaveLength(processes * rounds);
      for (let i = 1; i < tokens.length; i++) expect(tokens[i] > tokens[i - 1]).toBe(true);
    } finally {
      redis.disconnect();
    }
  });
});
