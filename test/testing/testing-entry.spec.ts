/**
 * `nestjs-redis-lock/testing`, used the way an application's own tests use it: imported by its
 * package name, on a real Redis (the run's REDIS_URL, or private redis-servers started here).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { TestingModule } from '@nestjs/testing';
import { DelayQueueService, LockService, LockServiceClosedError, RedisConnectionError } from 'nestjs-redis-lock';
import {
  closeRedisLockTestingModule,
  createRedisLockTestingModule,
  findFreePort,
  initRedisLockTestingModule,
  removeRedisLockKeys,
  startLocalRedisServer,
  startTestRedis,
  TestKeysNotRemovedError,
  TestRedisUnavailableError,
  uniqueKeyPrefix,
  type TestRedis,
} from 'nestjs-redis-lock/testing';
import { outcomeOf, TYPESCRIPT_NODE_ARGS } from '../support/child-process.js';
import { rawRedis, testRedisUrl } from '../support/test-app.js';
import { OrdersModule, OrdersService, PaymentGateway } from './fixtures/orders.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { useResource } from '../support/use-resource.js';
import { scanKeys } from '../support/redis-probes.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** `startTestRedis()` for a describe block (`useResource`): started before its tests, stopped after them. */
function useTestRedis(): TestRedis {
  return useResource(
    'the test Redis',
    () => startTestRedis(),
    (redis) => redis.stop(),
  );
}

describe('createRedisLockTestingModule', () => {
  const redis = useTestRedis();

  it('returns a TestingModuleBuilder: overrideProvider works, and feature modules inject LockService', async () => {
    const moduleRef = await createRedisLockTestingModule({ redis, imports: [OrdersModule] })
      .overrideProvider(PaymentGateway)
      .useFactory({
        factory: (locks: LockService) => ({ charge: async (orderId: string) => ({ ok: await locks.isLocked(`order:${orderId}`) }) }),
        inject: [LockService],
      })
      .compile();
    await moduleRef.init();
    try {
      // The fake gateway saw the order's lock held while it charged.
      await expect(moduleRef.get(OrdersService).pay('1001')).resolves.toEqual({ ok: true });
      await expect(moduleRef.get(LockService).isLocked('order:1001')).resolves.toBe(false);
    } finally {
      await closeRedisLockTestingModule(moduleRef, { removeKeys: true });
    }
  });

  it('passes module metadata and RedisLockModule options through', async () => {
    const keyPrefix = uniqueKeyPrefix('options');
    const moduleRef = await initRedisLockTestingModule({
      redis: redis.url,
      providers: [{ provide: 'CLOCK', useValue: 'fixed' }],
      redisLock: { keyPrefix, lock: { leaseTime: 1_500 } },
    });
    const client = rawRedis(redis.url);
    try {
      expect(moduleRef.get('CLOCK')).toBe('fixed');
      const lock = await moduleRef.get(LockService).acquire('report');
      const ttl = await client.pttl(new RedisKeySpace(keyPrefix).lock('report').owners);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(1_500);
      await lock.release();
    } finally {
      client.disconnect();
      await closeRedisLockTestingModule(moduleRef, { removeKeys: true });
    }
  });

  it('gives each module a key prefix of its own, so tests sharing one Redis never contend', async () => {
    const [a, b] = await Promise.all([initRedisLockTestingModule({ redis }), initRedisLockTestingModule({ redis })]);
    try {
      const heldByA = await a.get(LockService).tryAcquire('nightly-export');
      const heldByB = await b.get(LockService).tryAcquire('nightly-export');
      expect(heldByA).not.toBeNull();
      expect(heldByB).not.toBeNull();
      await Promise.all([heldByA!.release(), heldByB!.release()]);
    } finally {
      await Promise.all([closeRedisLockTestingModule(a, { removeKeys: true }), closeRedisLockTestingModule(b, { removeKeys: true })]);
    }
  });

  it('initRedisLockTestingModule rejects with the bootstrap error when Redis cannot be reached', async () => {
    const port = await findFreePort();
    await expect(
      initRedisLockTestingModule({ redis: `redis://127.0.0.1:${port}`, redisLock: { connectTimeout: 1_000 } }),
    ).rejects.toBeInstanceOf(RedisConnectionError);
  });
});

describe('closeRedisLockTestingModule and removeRedisLockKeys', () => {
  const redis = useTestRedis();

  /** A module that leaves keys behind: a fencing counter, a lock still held, a delayed job. */
  async function moduleWithKeys(keyPrefix: string): Promise<TestingModule> {
    const moduleRef = await initRedisLockTestingModule({ redis, redisLock: { keyPrefix } });
    const locks = moduleRef.get(LockService);
    await (await locks.acquire('released')).release();
    await locks.acquire('still-held');
    await locks.semaphore('workers', 2).acquire();
    await moduleRef.get(DelayQueueService).schedule('order.expire', { orderId: '1001' }, { delay: 3_600_000 });
    return moduleRef;
  }

  async function keysUnder(pattern: string): Promise<string[]> {
    const client = rawRedis(redis.url);
    try {
      return (await scanKeys(client, pattern)).sort();
    } finally {
      client.disconnect();
    }
  }

  it('with removeKeys, closes the module and then deletes every key under its prefix, and only those', async () => {
    const keyPrefix = uniqueKeyPrefix('cleanup');
    // Neighbours: a prefix that starts with ours, and one that only shares its first characters.
    const [moduleRef, nested, similar] = await Promise.all([
      moduleWithKeys(keyPrefix),
      moduleWithKeys(`${keyPrefix}:lock`),
      moduleWithKeys(`${keyPrefix}0`),
    ]);
    try {
      const before = await keysUnder(`${keyPrefix}:lock:{*`);
      const keys = new RedisKeySpace(keyPrefix);
      expect(before).toEqual(expect.arrayContaining([keys.lock('released').fence, keys.lock('still-held').owners]));
      expect(await keysUnder(`${keyPrefix}:dq:{*`)).not.toHaveLength(0);

      await closeRedisLockTestingModule(moduleRef, { removeKeys: true });

      expect(await keysUnder(`${keyPrefix}:lock:{*`)).toEqual([]);
      expect(await keysUnder(`${keyPrefix}:sem:{*`)).toEqual([]);
      expect(await keysUnder(`${keyPrefix}:dq:{*`)).toEqual([]);
      expect(await keysUnder(`${keyPrefix}:lock:lock:{*`)).not.toHaveLength(0);
      expect(await keysUnder(`${keyPrefix}0:*`)).not.toHaveLength(0);
    } finally {
      await Promise.all([
        closeRedisLockTestingModule(nested, { removeKeys: true }),
        closeRedisLockTestingModule(similar, { removeKeys: true }),
      ]);
    }
    expect(await keysUnder(`${keyPrefix}*`)).toEqual([]);
  });

  it('without removeKeys, keeps the keys (to look at after a failure)', async () => {
    const keyPrefix = uniqueKeyPrefix('kept');
    const moduleRef = await moduleWithKeys(keyPrefix);
    await closeRedisLockTestingModule(moduleRef);
    expect(await keysUnder(new RedisKeySpace(keyPrefix).lock('released').fence)).toHaveLength(1);
    const again = await initRedisLockTestingModule({ redis, redisLock: { keyPrefix } });
    await closeRedisLockTestingModule(again, { removeKeys: true });
    expect(await keysUnder(`${keyPrefix}:*`)).toEqual([]);
  });

  it('removeRedisLockKeys clears a running module, which goes on working', async () => {
    const keyPrefix = uniqueKeyPrefix('between-tests');
    const moduleRef = await initRedisLockTestingModule({ redis, redisLock: { keyPrefix } });
    try {
      const locks = moduleRef.get(LockService);
      await (await locks.acquire('a')).release();
      await (await locks.acquire('b')).release();
      await expect(removeRedisLockKeys(moduleRef)).resolves.toBe(2); // the two fencing counters
      expect(await keysUnder(`${keyPrefix}:*`)).toEqual([]);
      const lock = await locks.acquire('a');
      expect(lock.held).toBe(true);
      await lock.release();
    } finally {
      await closeRedisLockTestingModule(moduleRef, { removeKeys: true });
    }
  });

  it('closes an app created from the testing module, as well as the module itself', async () => {
    const keyPrefix = uniqueKeyPrefix('http');
    const moduleRef = await createRedisLockTestingModule({ redis, redisLock: { keyPrefix } }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    await (await app.get(LockService).acquire('x')).release();
    await closeRedisLockTestingModule(app, { removeKeys: true });
    expect(await keysUnder(`${keyPrefix}:*`)).toEqual([]);
  });

  it('in Redlock mode, also removes the keys from every Redlock master', async () => {
    const masters = await Promise.all([startLocalRedisServer(), startLocalRedisServer(), startLocalRedisServer()]);
    const keyPrefix = uniqueKeyPrefix('redlock');
    try {
      const moduleRef = await initRedisLockTestingModule({
        redis,
        redisLock: { keyPrefix, redlock: { clients: masters.map((master) => master.url) } },
      });
      await (await moduleRef.get(LockService).acquire('settlement')).release();
      const keysOn = async (url: string) => {
        const client = rawRedis(url);
        try {
          return await client.keys(`${keyPrefix}:*`);
        } finally {
          client.disconnect();
        }
      };
      for (const master of masters) expect(await keysOn(master.url)).not.toHaveLength(0);

      await closeRedisLockTestingModule(moduleRef, { removeKeys: true });
      for (const master of masters) expect(await keysOn(master.url)).toEqual([]);
    } finally {
      await Promise.all(masters.map((master) => master.stop()));
    }
  });

  it('when Redis is gone, still closes the module and rejects with TestKeysNotRemovedError', async () => {
    const privateRedis = await withoutRedisUrl(() => startTestRedis());
    const moduleRef = await initRedisLockTestingModule({ redis: privateRedis });
    await privateRedis.stop();
    const closing = closeRedisLockTestingModule(moduleRef, { removeKeys: true });
    await expect(closing).rejects.toBeInstanceOf(TestKeysNotRemovedError);
    await expect(closing).rejects.toMatchObject({ code: 'TEST_KEYS_NOT_REMOVED' });
    await expect(moduleRef.get(LockService).tryAcquire('after-close')).rejects.toBeInstanceOf(LockServiceClosedError);
  });

  it('refuses a module without RedisLockModule, with a message that says what to use', async () => {
    const { Test } = await import('@nestjs/testing');
    const plain = await Test.createTestingModule({}).compile();
    await expect(closeRedisLockTestingModule(plain, { removeKeys: true })).rejects.toThrow(/has no RedisLockModule/);
    await plain.close();
  });
});

// After the specs whose Redis is gone: ioredis keeps a 2 s timer after a connection that failed,
// and Jest warns when a file ends within it. The child processes of this block outlast it.
describe('startTestRedis', () => {
  it('uses the server at REDIS_URL when it is set, and leaves it running on stop()', async () => {
    const redis = await startTestRedis();
    expect(redis).toMatchObject({ url: testRedisUrl(), source: 'REDIS_URL' });
    expect(redis.server).toBeUndefined();
    await redis.stop();
    const client = rawRedis(redis.url);
    try {
      await expect(client.ping()).resolves.toBe('PONG');
    } finally {
      client.disconnect();
    }
  });

  it('uses a URL given in its options before REDIS_URL', async () => {
    const redis = await startTestRedis({ url: 'redis://127.0.0.1:1' });
    expect(redis).toMatchObject({ url: 'redis://127.0.0.1:1', source: 'REDIS_URL' });
  });

  it('without REDIS_URL starts a private redis-server that locks work on, and stop() frees its port and directory', async () => {
    const redis = await withoutRedisUrl(() => startTestRedis());
    let stopped = false;
    try {
      expect(redis.source).toBe('redis-server');
      expect(redis.url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
      expect(redis.url).not.toBe(testRedisUrl());
      const server = redis.server!;
      expect(existsSync(server.dir)).toBe(true);

      const [a, b] = await Promise.all([
        initRedisLockTestingModule({ redis, redisLock: { keyPrefix: 'shared' } }),
        initRedisLockTestingModule({ redis, redisLock: { keyPrefix: 'shared' } }),
      ]);
      try {
        const held = await a.get(LockService).acquire('invoice-export');
        expect(await b.get(LockService).tryAcquire('invoice-export')).toBeNull();
        await held.release();
        const next = await b.get(LockService).tryAcquire('invoice-export');
        expect(BigInt(next!.fencingToken)).toBeGreaterThan(BigInt(held.fencingToken));
        await next!.release();
      } finally {
        await Promise.all([a.close(), b.close()]);
      }

      await redis.stop();
      stopped = true;
      expect(server.process.exitCode !== null || server.process.signalCode !== null).toBe(true);
      expect(existsSync(server.dir)).toBe(false);
      await expect(connectionRefused(server.port)).resolves.toBe(true);
      await expect(canListenOn(server.port)).resolves.toBe(true);
      await redis.stop(); // twice is harmless
    } finally {
      if (!stopped) await redis.stop();
    }
  });

  it('restarts the private server on the same port, without its keys (a crash of a Redis without persistence)', async () => {
    const redis = await withoutRedisUrl(() => startTestRedis());
    const client = rawRedis(redis.url);
    try {
      await client.set('before-crash', '1');
      const firstPid = redis.server!.process.pid;
      await redis.server!.restart({ downtimeMs: 100 });
      expect(redis.server!.process.pid).not.toBe(firstPid);
      await expect(client.get('before-crash')).resolves.toBeNull();
    } finally {
      client.disconnect();
      await redis.stop();
    }
  });

  it('stops a private server at the end of an `await using` block', async () => {
    let port: number;
    {
      await using server = await startLocalRedisServer();
      port = server.port;
      await expect(connectionRefused(port)).resolves.toBe(false);
    }
    await expect(connectionRefused(port)).resolves.toBe(true);
  });

  it('with no REDIS_URL and no redis-server on PATH, fails with a message that says how to get one', async () => {
    const emptyDir = mkdtempSync(join(tmpdir(), 'no-redis-server-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, PATH: emptyDir };
      delete env.REDIS_URL;
      for (const mode of ['startTestRedis', 'local']) {
        const result = await runChild(mode, env);
        expect(result).toMatchObject({ ok: false, name: 'TestRedisUnavailableError', code: 'TEST_REDIS_UNAVAILABLE' });
        expect(result.message).toContain('REDIS_URL=redis://host:port');
        expect(result.message).toContain('sudo apt-get install redis-server');
        expect(result.message).toContain('brew install redis');
      }
      // The same child with redis-server on PATH starts one: the failure above came from PATH alone.
      const withServer = { ...env, PATH: dirname(findOnPath('redis-server')) };
      await expect(runChild('startTestRedis', withServer)).resolves.toMatchObject({ ok: true, source: 'redis-server' });
    } finally {
      rmSync(emptyDir, { recursive: true, force: true });
    }
  });

  it('is the error class the entry point exports', () => {
    const error = new TestRedisUnavailableError();
    expect(error.code).toBe('TEST_REDIS_UNAVAILABLE');
    expect(error.message).toMatch(/REDIS_URL is not set and there is no redis-server on PATH/);
  });
});

describe('the entry points', () => {
  it('the main entry point never loads the testing one (nor @nestjs/testing)', () => {
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      for (const [, specifier] of source.matchAll(/(?:import|export)[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g)) {
        if (!specifier) continue;
        expect(specifier).not.toBe('@nestjs/testing');
        expect(specifier).not.toMatch(/^nestjs-redis-lock\/testing/);
        if (specifier.startsWith('.')) visit(join(dirname(file), specifier.replace(/\.js$/, '.ts')));
      }
    };
    visit(join(ROOT, 'lib', 'index.ts'));
    expect(seen.size).toBeGreaterThan(20);
    expect([...seen].filter((file) => file.includes(`${join('lib', 'testing')}`))).toEqual([]);
  });
});

/** Runs `fn` with REDIS_URL unset (restored afterwards): the path of a user without a Redis of their own. */
async function withoutRedisUrl<T>(fn: () => Promise<T>): Promise<T> {
  const saved = process.env.REDIS_URL;
  delete process.env.REDIS_URL;
  try {
    return await fn();
  } finally {
    process.env.REDIS_URL = saved;
  }
}

/** Whether a TCP connection to 127.0.0.1:port is refused (nothing listens there). */
function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNREFUSED' ? resolve(true) : reject(error)));
  });
}

function canListenOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function findOnPath(binary: string): string {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, binary))) return join(dir, binary);
  }
  throw new Error(`${binary} is not on PATH`);
}

interface ChildResult {
  ok: boolean;
  name?: string;
  code?: string;
  message: string;
  source?: string;
}

/** Runs the fixture in a Node process of its own with `env`; resolves with the JSON line it printed. */
function runChild(mode: string, env: NodeJS.ProcessEnv): Promise<ChildResult> {
  const fixture = join(import.meta.dirname, 'fixtures', 'start-test-redis-child.ts');
  const child = spawn(process.execPath, [...TYPESCRIPT_NODE_ARGS, fixture, mode], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return outcomeOf(child).then(({ code, stdout, stderr }) => {
    const line = stdout.trim().split('\n').pop();
    if (code !== 0 || !line) throw new Error(`fixture exited with ${code}:\n${stdout}${stderr}`);
    return JSON.parse(line) as ChildResult;
  });
}
