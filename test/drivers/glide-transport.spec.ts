import { Redis } from 'ioredis';
import { RedisCommandError, RedisConnectionError } from '../../lib/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { IoredisTransport } from '../../lib/core/redis/ioredis-transport.js';
import { RedisScript } from '../../lib/core/redis/redis-script.js';
import type { TransportPolicy } from '../../lib/core/redis/redis-transport.js';
import { isGlideClient, isGlideClusterClient } from '../../lib/core/redis/valkey-glide/glide-client-detection.js';
import { glidePackage } from '../../lib/core/redis/valkey-glide/glide-package.js';
import { GlideTransport } from '../../lib/core/redis/valkey-glide/glide-transport.js';
import { glideConfigFromUrl } from '../../lib/core/redis/valkey-glide/glide-url.js';
import { toReplyError } from '../../lib/core/redis/valkey-glide/glide-errors.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { useSharedTestCluster } from '../support/redis-cluster.js';
import { watchEventLoopStalls } from '../support/event-loop-stalls.js';
import { deferred, waitFor } from '../support/timing.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';

failOnUnhandledRejections({ after: 'each' });

const policy: TransportPolicy = { unreachableTimeout: 2_000, onConnectionError: () => undefined };

/** A script whose reply has every Lua type a script of ours returns. */
const SHAPES = new RedisScript(
  'glide-shapes',
  `redis.call('SET', KEYS[1], ARGV[1])
   return { 1, 'two', false, { 3, 'four' }, 5.5, redis.call('GET', KEYS[1]), redis.call('TIME')[1] ~= nil and 1 or 0 }`,
);
const COUNTS = new RedisScript('glide-counts', `return redis.call('INCR', KEYS[1])`);
const FAILS = new RedisScript('glide-fails', `return redis.error_reply('ERR unknown job state ' .. ARGV[1])`);

function farDeadline(): number {
  return performance.now() + 1_000;
}

describe('GlideTransport on a single Redis', () => {
  const server = useLocalRedisServer();
  let glide: GlideTransport;
  let ioredis: IoredisTransport;

  beforeAll(async () => {
    glide = new GlideTransport({ config: glideConfigFromUrl(server.url) }, policy);
    ioredis = new IoredisTransport(server.url, policy);
    await Promise.all([glide.verify(5_000), ioredis.verify(5_000)]);
  });
  afterAll(async () => {
    await Promise.all([glide?.close(farDeadline()), ioredis?.close(farDeadline())]);
  });

  it('answers commands in the shapes the ioredis transport gives', async () => {
    await ioredis.command('del', 'g:z', 'g:h', 'g:z2', 'g:z3');
    await ioredis.command('zadd', 'g:z', 1.5, 'a', 2, 'b', 1e13, 'c');
    await ioredis.command('hset', 'g:h', 'f', 'v', 'g', 'w');
    await ioredis.command('zadd', 'g:z2', 7, 'x', 8, 'y');
    await ioredis.command('zadd', 'g:z3', 7, 'x', 8, 'y');
    const commands: Array<[string, ...Array<string | number>]> = [
      ['zscore', 'g:z', 'a'],
      ['zscore', 'g:z', 'c'],
      ['zscore', 'g:z', 'missing'],
      ['zrange', 'g:z', 0, -1, 'WITHSCORES'],
      ['zrange', 'g:z', 0, -1],
      ['zcard', 'g:z'],
      ['hgetall', 'g:h'],
      ['config', 'get', 'maxmemory-policy'],
      ['get', 'g:missing'],
      ['exists', 'g:z', 'g:h'],
      ['lrange', 'g:missing', 0, -1],
      ['ping'],
    ];
    for (const [name, ...args] of commands) {
      expect([name, await glide.command(name, ...args)]).toEqual([name, await ioredis.command(name, ...args)]);
    }
    // Destructive reads, one set each.
    expect(await glide.command('zpopmin', 'g:z2')).toEqual(await ioredis.command('zpopmin', 'g:z3'));
    expect(await glide.command('bzpopmin', 'g:z2', 1)).toEqual(['g:z2', 'y', '8']);
    const [glideTime, ioredisTime] = [await glide.command<unknown[]>('time'), await ioredis.command<unknown[]>('time')];
    expect(glideTime.map((part) => typeof part)).toEqual(ioredisTime.map((part) => typeof part));
    const scanned = await glide.command<[string, string[]]>('scan', '0', 'MATCH', 'g:*', 'COUNT', 1000);
    expect(typeof scanned[0]).toBe('string');
    expect(scanned[1].sort()).toEqual(['g:h', 'g:z', 'g:z3']); // g:z2 emptied by the pops
  });

  it('runs scripts with the ioredis transport’s replies, also after SCRIPT FLUSH (NOSCRIPT)', async () => {
    const expected = await ioredis.runScript(SHAPES, ['g:s'], ['value']);
    expect(await glide.runScript(SHAPES, ['g:s'], ['value'])).toEqual(expected);
    await glide.command('script', 'flush');
    expect(await glide.command('script', 'exists', SHAPES.sha)).toEqual([0]);
    expect(await glide.runScript(SHAPES, ['g:s'], ['value'])).toEqual(expected);
    expect(await glide.command('script', 'exists', SHAPES.sha)).toEqual([1]);
  });

  it('loads scripts ahead on the server', async () => {
    await glide.command('script', 'flush');
    await glide.loadScripts([SHAPES]);
    expect(await ioredis.command('script', 'exists', SHAPES.sha)).toEqual([1]);
  });

  it('turns a server’s error reply into RedisCommandError with the server’s own text', async () => {
    const fromGlide = await glide.runScript(FAILS, ['g:f'], ['x']).catch((e: unknown) => e);
    const fromIoredis = await ioredis.runScript(FAILS, ['g:f'], ['x']).catch((e: unknown) => e);
    expect(fromGlide).toBeInstanceOf(RedisCommandError);
    expect((fromGlide as Error).message).toBe((fromIoredis as Error).message);
    expect((fromGlide as Error).message).toContain('ERR unknown job state x');
    await glide.command('set', 'g:str', 'v');
    const wrongType = await glide.command('lpush', 'g:str', 'x').catch((e: unknown) => e);
    expect(wrongType).toBeInstanceOf(RedisCommandError);
    expect((wrongType as Error).message).toContain('WRONGTYPE Operation against a key holding the wrong kind of value');
  });

  it('delivers pub/sub messages to a subscriber, ready once connected', async () => {
    const subscriber = glide.openSubscriber('test');
    const ready = deferred();
    subscriber.onReady(() => ready.resolve());
    const received: Array<[string, string]> = [];
    subscriber.onMessage((channel, message) => received.push([channel, message]));
    await subscriber.connect();
    await ready.promise;
    expect(subscriber.ready).toBe(true);
    await subscriber.subscribe('g:ch');
    expect(await glide.command(glide.publishCommand, 'g:ch', 'hello')).toBe(1);
    await waitFor(() => received.length === 1, 5_000, 'the message');
    expect(received).toEqual([['g:ch', 'hello']]);
    await subscriber.unsubscribe('g:ch');
    expect(await glide.command('publish', 'g:ch', 'unheard')).toBe(0);
    await subscriber.close();
  });

  it('blocks a pop past GLIDE’s 250 ms request timeout, and wakes it when a member comes', async () => {
    const reader = glide.openBlockingReader('test');
    const started = performance.now();
    expect(await reader.popMin('g:marker', 700)).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(650);
    const popping = reader.popMin('g:marker', 10_000);
    await waitFor(async () => (await ioredis.command<string>('client', 'list')).includes('cmd=bzpopmin'), 5_000, 'the pop to block');
    await glide.command('zadd', 'g:marker', 0, 'wake');
    expect(await popping).toBe(true);
    await reader.close();
  });

  it('waits for replicas (WAIT) past the request timeout: none here, so 0 after the timeout', async () => {
    await glide.command('set', 'g:w', '1');
    expect(await glide.waitForReplicas('g:w', 0, 100)).toBe(0);
    const started = performance.now();
    expect(await glide.waitForReplicas('g:w', 1, 600)).toBe(0);
    expect(performance.now() - started).toBeGreaterThanOrEqual(550);
  });

  it('scans keys, runs a command on every master, and opens a scratch connection', async () => {
    await glide.command('set', 'g:scan:1', '1');
    await glide.command('set', 'g:scan:2', '1');
    expect((await glide.scanKeys('g:scan:*', 10)).keys.sort()).toEqual(['g:scan:1', 'g:scan:2']);
    expect(await glide.scanKeys('g:scan:*', 1)).toEqual({ keys: [expect.stringMatching(/^g:scan:/)], truncated: true });
    expect(await glide.commandOnEveryMaster(1_000, 'ping')).toEqual([{ endpoint: glide.endpoint, reply: 'PONG' }]);
    const scratch = glide.openScratch();
    expect(await scratch.command('del', 'g:scan:1')).toBe(1);
    expect((await scratch.scanKeys('g:scan:*', 10)).keys).toEqual(['g:scan:2']);
    await scratch.close();
  });

  it('closes by the deadline with a command still blocked on its connection, which then rejects', async () => {
    const transport = new GlideTransport({ config: glideConfigFromUrl(server.url) }, policy);
    await transport.verify(2_000);
    const blocked = transport.command('blmove', 'g:never', 'g:dst', 'LEFT', 'RIGHT', 30).catch((e: unknown) => e);
    await waitFor(async () => (await ioredis.command<string>('client', 'list')).includes('cmd=blmove'), 5_000, 'BLMOVE to block');
    // Its time less any stall of this process meanwhile (a loaded CI host).
    const stalls = watchEventLoopStalls();
    const started = Date.now();
    await transport.close(performance.now() + 300);
    expect(stalls.runnableSince(started)).toBeLessThan(1_000);
    stalls.stop();
    expect(await blocked).toBeInstanceOf(RedisConnectionError);
    expect(transport.ended).toBe(true);
  });

  it('gives the same shapes through a user’s client speaking RESP2', async () => {
    const glidePkg = glidePackage();
    const config = { ...glideConfigFromUrl(server.url), protocol: glidePkg.ProtocolVersion.RESP2 };
    const userClient = await glidePkg.GlideClient.createClient(config);
    const transport = new GlideTransport({ client: userClient, config: glideConfigFromUrl(server.url) }, policy);
    await ioredis.command('del', 'g:r2');
    await ioredis.command('zadd', 'g:r2', 1.5, 'a', 2, 'b');
    for (const [name, ...args] of [
      ['zrange', 'g:r2', 0, -1, 'WITHSCORES'],
      ['zscore', 'g:r2', 'a'],
      ['config', 'get', 'maxmemory-policy'],
    ]) {
      expect(await transport.command(String(name), ...args)).toEqual(await ioredis.command(String(name), ...args));
    }
    expect(await transport.runScript(SHAPES, ['g:s'], ['value'])).toEqual(await ioredis.runScript(SHAPES, ['g:s'], ['value']));
    await transport.close(farDeadline());
    userClient.close();
  });

  it('queues requests beyond GLIDE’s in-flight limit (1000) instead of failing them', async () => {
    const replies = await Promise.all(Array.from({ length: 2_500 }, (_, i) => glide.command('set', `g:burst:${i}`, '1')));
    expect(replies.every((reply) => reply === 'OK')).toBe(true);
    // Scripts answer faster than GLIDE's core frees their slots: the gate keeps a margin, and retries a refusal.
    const counts = await Promise.all(Array.from({ length: 10_000 }, () => glide.runScript<number>(COUNTS, ['g:burst:count'], [])));
    expect(Math.max(...counts)).toBe(10_000);
    const scratch = glide.openScratch();
    const removed = await Promise.all(Array.from({ length: 2_500 }, (_, i) => scratch.command<number>('unlink', `g:burst:${i}`)));
    expect(removed.reduce((sum, n) => sum + n, 0)).toBe(2_500);
    await scratch.close();
  });

  it('uses a client the user owns and never closes it', async () => {
    const glidePkg = glidePackage();
    const userClient = await glidePkg.GlideClient.createClient(glideConfigFromUrl(server.url));
    expect(isGlideClient(userClient)).toBe(true);
    expect(isGlideClusterClient(userClient)).toBe(false);
    expect(isGlideClient(new Redis({ lazyConnect: true }))).toBe(false);
    const transport = new GlideTransport({ client: userClient, config: glideConfigFromUrl(server.url) }, policy);
    await transport.verify(2_000);
    expect(await transport.command('ping')).toBe('PONG');
    const subscriber = transport.openSubscriber('test');
    await subscriber.connect();
    await transport.close(farDeadline());
    expect(await userClient.customCommand(['PING'])).toBe('PONG');
    userClient.close();
  });
});

describe('GlideTransport helpers', () => {
  it('parses a redis:// or rediss:// URL into a GLIDE configuration', () => {
    expect(glideConfigFromUrl('rediss://app:s%40cret@cache.example:6380/2')).toEqual({
      addresses: [{ host: 'cache.example', port: 6380 }],
      useTLS: true,
      credentials: { username: 'app', password: 's@cret' },
      databaseId: 2,
    });
    expect(glideConfigFromUrl('redis://:pw@[::1]')).toEqual({ addresses: [{ host: '::1', port: 6379 }], credentials: { password: 'pw' } });
    expect(() => glideConfigFromUrl('http://x:secret@host')).toThrow(/redis:\/\/ or rediss:\/\//);
    expect(() => glideConfigFromUrl('http://x:secret@host')).not.toThrow(/secret/);
  });

  it('rewords GLIDE’s error replies back to the server’s text', () => {
    const glideError = (name: string, message: string) => Object.assign(new Error(message), { name });
    const cases: Array<[string, string]> = [
      [
        'An error was signalled by the server: - NoScriptError: No matching script. Please use EVAL.',
        'NOSCRIPT No matching script. Please use EVAL.',
      ],
      ['An error was signalled by the server: - ResponseError: unknown job state x', 'ERR unknown job state x'],
      [
        "An error was signalled by the server: - ReadOnly: You can't write against a read only replica.",
        "READONLY You can't write against a read only replica.",
      ],
      [
        'WRONGTYPE: Operation against a key holding the wrong kind of value',
        'WRONGTYPE Operation against a key holding the wrong kind of value',
      ],
      ["OOM: command not allowed when used memory > 'maxmemory'.", "OOM command not allowed when used memory > 'maxmemory'."],
    ];
    for (const [message, text] of cases) {
      const reply = toReplyError(glideError('RequestError', message)) as Error;
      expect([reply.name, reply.message]).toEqual(['ReplyError', text]);
    }
    const timeout = glideError('TimeoutError', 'timed out');
    expect(toReplyError(timeout)).toBe(timeout);
  });
});

describe('GlideTransport when Redis cannot be reached', () => {
  const guarded = useLocalRedisServer({ args: ['--requirepass', 'right-password'] });
  let closedPort: number;

  beforeAll(async () => {
    const stopped = await startLocalRedisServer();
    closedPort = stopped.port;
    await stopped.stop();
  });

  const cases: Array<[string, () => string, RegExp]> = [
    ['a closed port', () => `redis://127.0.0.1:${closedPort}`, /ECONNREFUSED/],
    ['a wrong password', () => `redis://:wrong-password@127.0.0.1:${guarded.port}`, /WRONGPASS/],
    ['a missing password', () => `redis://127.0.0.1:${guarded.port}`, /NOAUTH/],
  ];

  it.each(cases)('verify() fails naming the cause: %s', async (_label, url, cause) => {
    const transport = new GlideTransport({ config: glideConfigFromUrl(url()) }, policy);
    const error = await transport.verify(5_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisConnectionError);
    expect((error as Error).message).toMatch(cause);
    expect((error as Error).message).not.toContain('right-password');
    expect((error as Error).message).not.toContain('wrong-password');
    await transport.close(farDeadline());
  });

  it('settles a call within the bound with RedisConnectionError naming the cause once Redis is stopped', async () => {
    const server: LocalRedisServer = await startLocalRedisServer();
    const transport = new GlideTransport({ config: glideConfigFromUrl(server.url) }, policy);
    try {
      await transport.verify(5_000);
      const back = deferred();
      const restarted = server.restart({ until: back.promise });
      await waitFor(() => server.process.exitCode !== null || server.process.signalCode !== null, 5_000, 'the server to stop');
      const started = performance.now();
      const error = await transport.command('ping').catch((e: unknown) => e);
      const elapsed = performance.now() - started;
      expect(error).toBeInstanceOf(RedisConnectionError);
      expect((error as Error).message).toMatch(/ECONNREFUSED/);
      expect(elapsed).toBeLessThan(2_000 + 1_000);
      expect(transport.ready).toBe(false);
      const readyAgain = deferred();
      transport.onReady(() => readyAgain.resolve());
      back.resolve();
      await restarted;
      await readyAgain.promise;
      expect(await transport.command('ping')).toBe('PONG');
    } finally {
      await transport.close(farDeadline());
      await server.stop();
    }
  });
});

describe('GlideTransport when the socket drops under a request (fault proxy)', () => {
  let server: LocalRedisServer;
  let proxy: FaultProxy;
  let transport: GlideTransport;
  let admin: Redis;

  // The server is stopped last, once every client of it is closed.
  beforeAll(async () => {
    server = await startLocalRedisServer();
    proxy = await FaultProxy.start({ port: server.port });
    transport = new GlideTransport({ config: glideConfigFromUrl(proxy.url) }, policy);
    admin = new Redis(server.url);
    await transport.verify(5_000);
  });
  afterAll(async () => {
    await transport?.close(farDeadline());
    await admin?.quit();
    await proxy?.stop();
    await server?.stop();
  });

  it('rejects the request in flight and never sends it again (resendsUnanswered: false)', async () => {
    expect(transport.resendsUnanswered).toBe(false);
    const moving = transport.command('blmove', 'g:src', 'g:dst', 'LEFT', 'RIGHT', 5).catch((e: unknown) => e);
    await waitFor(async () => String(await admin.call('client', 'list')).includes('cmd=blmove'), 5_000, 'BLMOVE to block');
    proxy.resetAll();
    const error = await moving;
    expect(error).toBeInstanceOf(RedisConnectionError);
    // Back on a new connection: a BLMOVE sent again would block it and take the pushed member.
    await waitFor(
      () =>
        transport.command('ping').then(
          () => true,
          () => false,
        ),
      5_000,
      'the reconnect',
    );
    await admin.lpush('g:src', 'x');
    expect(await admin.lrange('g:src', 0, -1)).toEqual(['x']);
    expect(await admin.lrange('g:dst', 0, -1)).toEqual([]);
  });

  it('subscribes again after its socket drops, says it is ready again, and delivers the next message', async () => {
    const subscriber = transport.openSubscriber('test');
    const received: string[] = [];
    subscriber.onMessage((_channel, message) => received.push(message));
    let readyCount = 0;
    subscriber.onReady(() => readyCount++);
    await subscriber.connect();
    await subscriber.subscribe('g:resub');
    await waitFor(() => readyCount === 1, 5_000, 'the first ready');
    proxy.resetAll();
    await waitFor(() => readyCount === 2, 10_000, 'ready again after the reconnect');
    expect(await admin.publish('g:resub', 'after')).toBe(1);
    await waitFor(() => received.includes('after'), 5_000, 'the message sent after the reconnect');
    await subscriber.close();
  });

  it('reports a blocking reader lost, before its pop rejects, when its socket drops', async () => {
    const reader = transport.openBlockingReader('test');
    const lost = deferred();
    reader.onLost(() => lost.resolve());
    const popping = reader.popMin('g:lost', 10_000).catch((e: unknown) => e);
    await waitFor(async () => String(await admin.call('client', 'list')).includes('cmd=bzpopmin'), 5_000, 'the pop to block');
    proxy.resetAll();
    await lost.promise;
    expect(await popping).toBeInstanceOf(RedisConnectionError);
    await reader.close();
  });
});

describe('GlideTransport on a cluster', () => {
  const cluster = useSharedTestCluster();
  let glide: GlideTransport;

  beforeAll(async () => {
    glide = new GlideTransport({ config: { addresses: cluster.nodes(), clusterMode: true } }, policy);
    await glide.verify(10_000);
  });
  afterAll(async () => {
    await glide?.close(farDeadline());
  });

  it('is a cluster: SPUBLISH, and every master answers', async () => {
    expect(glide.isCluster).toBe(true);
    expect(glide.publishCommand).toBe('spublish');
    const masters = await glide.commandOnEveryMaster(2_000, 'ping');
    expect(masters.length).toBeGreaterThanOrEqual(3);
    for (const reply of masters) expect(reply).toEqual({ endpoint: expect.any(String), reply: 'PONG' });
  });

  it('runs scripts on the master of their first key, also after SCRIPT FLUSH on every master', async () => {
    const keys = ['{ga}s', '{gb}s', '{gc}s'];
    for (const key of keys) expect(await glide.runScript(SHAPES, [key], ['v'])).toEqual([1, 'two', null, [3, 'four'], 5, 'v', 1]);
    await glide.commandOnEveryMaster(2_000, 'script', 'flush');
    for (const key of keys) expect(await glide.runScript(SHAPES, [key], ['w'])).toEqual([1, 'two', null, [3, 'four'], 5, 'w', 1]);
  });

  it('scans every master', async () => {
    const keys = ['gscan:{a}', 'gscan:{b}', 'gscan:{c}', 'gscan:{d}', 'gscan:{e}', 'gscan:{f}'];
    for (const key of keys) await glide.command('set', key, '1');
    const found = await glide.scanKeys('gscan:*', 100);
    expect(found).toEqual({ keys: expect.arrayContaining(keys), truncated: false });
    expect(found.keys).toHaveLength(keys.length);
  });

  it('delivers sharded pub/sub messages on channels of different slots', async () => {
    const subscriber = glide.openSubscriber('test');
    const received: string[] = [];
    subscriber.onMessage((channel, message) => received.push(`${channel}=${message}`));
    await subscriber.connect();
    const channels = ['gch:{a}', 'gch:{b}', 'gch:{c}'];
    for (const channel of channels) await subscriber.subscribe(channel);
    for (const channel of channels) expect(await glide.command('spublish', channel, 'm')).toBe(1);
    await waitFor(() => received.length === channels.length, 5_000, 'the messages');
    expect(received.sort()).toEqual(channels.map((c) => `${c}=m`));
    await subscriber.close();
  });

  it('pops on the key’s master past the request timeout', async () => {
    const reader = glide.openBlockingReader('test');
    const started = performance.now();
    expect(await reader.popMin('gm:{x}', 600)).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(550);
    await glide.command('zadd', 'gm:{x}', 0, 'wake');
    expect(await reader.popMin('gm:{x}', 5_000)).toBe(true);
    await reader.close();
  });

  it('waits (WAIT) on the master of the key’s slot, which counts its replica', async () => {
    for (const key of ['gw:{x}', 'gw:{y}', 'gw:{z}']) {
      await glide.command('set', key, '1');
      expect(await glide.waitForReplicas(key, 1, 5_000)).toBe(1);
    }
  });
});
