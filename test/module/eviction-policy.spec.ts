import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { LockService, RedisEvictionPolicyError, RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { uniquePrefix } from '../support/test-app.js';
import { holdsWithin } from '../support/timing.js';

/**
 * A Redis that evicts keys (any maxmemory-policy but noeviction; volatile-* too, lock keys have a
 * TTL) can drop a held lock or a fencing counter: two owners, a repeated token. Bootstrap refuses
 * such a server unless told otherwise.
 */
describe('maxmemory-policy check at bootstrap', () => {
  let evicting: LocalRedisServer;
  let noConfig: LocalRedisServer;
  let blind: LocalRedisServer;
  const apps: TestingModule[] = [];
  let warnings: string[];
  let errors: string[];

  const servers: LocalRedisServer[] = [];
  async function server(args: string[]): Promise<LocalRedisServer> {
    const started = await startLocalRedisServer({ args });
    servers.push(started);
    return started;
  }

  beforeAll(async () => {
    evicting = await server(['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru']);
    // A managed Redis often renames or forbids CONFIG: the policy is read from INFO instead.
    noConfig = await server(['--maxmemory', '64mb', '--maxmemory-policy', 'volatile-ttl', '--rename-command', 'CONFIG', '']);
    blind = await server(['--maxmemory-policy', 'allkeys-lru', '--rename-command', 'CONFIG', '', '--rename-command', 'INFO', '']);
  });
  afterAll(async () => {
    await Promise.allSettled(apps.map((a) => a.close()));
    await Promise.all(servers.map((s) => s.stop()));
  });
  beforeEach(() => {
    warnings = [];
    errors = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
    jest.spyOn(Logger.prototype, 'error').mockImplementation((message: unknown) => void errors.push(String(message)));
  });
  afterEach(() => jest.restoreAllMocks());

  async function bootstrap(options: RedisLockModuleOptions): Promise<TestingModule> {
    const app = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ keyPrefix: uniquePrefix('evict'), ...options })],
    }).compile();
    apps.push(app);
    await app.init();
    return app;
  }

  it('refuses to start on an allkeys-lru Redis, naming maxmemory-policy and noeviction', async () => {
    const error = await bootstrap({ redis: evicting.url }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisEvictionPolicyError);
    expect(error).toMatchObject({ code: 'REDIS_EVICTION_POLICY', policy: 'allkeys-lru' });
    expect((error as Error).message).toMatch(/maxmemory-policy/);
    expect((error as Error).message).toMatch(/allkeys-lru/);
    expect((error as Error).message).toMatch(/noeviction/);
    expect((error as Error).message).toMatch(/evictionPolicyCheck/);
  });

  it('refuses a volatile-* policy too (lock keys have a TTL), read from INFO when CONFIG is renamed away', async () => {
    const error = await bootstrap({ redis: noConfig.url }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisEvictionPolicyError);
    expect(error).toMatchObject({ policy: 'volatile-ttl' });
  });

  it("starts with evictionPolicyCheck: 'warn', and warns", async () => {
    const app = await bootstrap({ redis: evicting.url, evictionPolicyCheck: 'warn' });
    const lock = await app.get(LockService).acquire('works');
    await lock.release();
    expect(warnings.filter((w) => /maxmemory-policy/.test(w) && /allkeys-lru/.test(w))).toHaveLength(1);
  });

  it("starts silently with evictionPolicyCheck: 'off'", async () => {
    const app = await bootstrap({ redis: evicting.url, evictionPolicyCheck: 'off' });
    expect(await app.get(LockService).isLocked('works')).toBe(false);
    expect(warnings.filter((w) => /maxmemory-policy/.test(w))).toEqual([]);
  });

  it('starts on a noeviction Redis without a word', async () => {
    const other = await server([]);
    const redis = new Redis(other.url);
    try {
      expect(await redis.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
      const app = await bootstrap({ redis: other.url });
      expect(await app.get(LockService).isLocked('works')).toBe(false);
      expect(warnings.filter((w) => /maxmemory-policy/.test(w))).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('starts when neither CONFIG nor INFO may be used, and warns that the policy is unknown', async () => {
    // ioredis' ready check uses INFO too: without INFO a client connects only without it.
    const app = await bootstrap({ redis: { host: '127.0.0.1', port: blind.port, enableReadyCheck: false } });
    expect(await app.get(LockService).isLocked('works')).toBe(false);
    expect(warnings.filter((w) => /maxmemory-policy/.test(w) && /noeviction/.test(w))).toHaveLength(1);
  });

  it('with connectTimeout: 0 bootstrap does not wait for Redis; the policy is reported once the connection is ready', async () => {
    const app = await bootstrap({ redis: evicting.url, connectTimeout: 0 });
    expect(await app.get(LockService).isLocked('works')).toBe(false);
    await holdsWithin(() => errors.length > 0, 10_000);
    expect(errors.filter((e) => /maxmemory-policy/.test(e) && /allkeys-lru/.test(e))).toHaveLength(1);
  });

  it('checks every Redlock master, not only the first', async () => {
    const [first, second] = [await server([]), await server([])];
    const error = await bootstrap({ redlock: { clients: [first.url, second.url, evicting.url] } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisEvictionPolicyError);
    expect(error).toMatchObject({ policy: 'allkeys-lru', endpoint: `127.0.0.1:${evicting.port}` });
  });

  it('validates the option', async () => {
    const error = await bootstrap({ redis: evicting.url, evictionPolicyCheck: 'sometimes' as never }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/`evictionPolicyCheck`/);
  });
});
