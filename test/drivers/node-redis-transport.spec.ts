import { createClient, createCluster } from 'redis';
import { RedisCommandError } from '../../lib/core/errors/redis-command.error.js';
import { RedisConnectionError } from '../../lib/core/errors/redis-connection.error.js';
import { InvalidOptionsError } from '../../lib/core/errors/invalid-options.error.js';
import { IoredisTransport } from '../../lib/core/redis/ioredis-transport.js';
import { isNodeRedisClient, isNodeRedisCluster } from '../../lib/core/redis/node-redis/node-redis-detect.js';
import { NodeRedisTransport } from '../../lib/core/redis/node-redis/node-redis-transport.js';
import type { NodeRedisClient, NodeRedisCluster } from '../../lib/core/redis/node-redis/node-redis-types.js';
import { RedisScript } from '../../lib/core/redis/redis-script.js';
import type { RedisTransport, TransportPolicy } from '../../lib/core/redis/redis-transport.js';
import { findFreePort } from '../../lib/testing/local-redis-server.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { useSharedTestCluster } from '../support/redis-cluster.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { uniquePrefix } from '../support/test-app.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';
import { useResource } from '../support/use-resource.js';
import { waitFor } from '../support/timing.js';
import { Redis, Cluster } from 'ioredis';

/*
 * The node-redis transport against real Redis, single node and cluster: the same contract as the
 * ioredis transport (redis-transport.ts), replies compared side by side with it.
 */

failOnUnhandledRejections();

/** Records every connection error the transports report. */
function recordingPolicy(
  unreachableTimeout: number | false = 2_000,
): TransportPolicy & { errors: Array<{ purpose: string; error: Error }> } {
  const errors: Array<{ purpose: string; error: Error }> = [];
  return { unreachableTimeout, errors, onConnectionError: (purpose, error) => errors.push({ purpose, error }) };
}

/** Settles `promise` into its outcome and the ms it took. */
async function timed<T>(promise: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const start = performance.now();
  try {
    const value = await promise;
    return { ms: performance.now() - start, value };
  } catch (error) {
    return { ms: performance.now() - start, error };
  }
}

/** The messages a subscriber received, and a wait for the first one on a channel. */
class Inbox {
  private readonly received: Array<[string, string]> = [];
  private readonly waiting: Array<() => void> = [];
  readonly listener = (channel: string, message: string): void => {
    this.received.push([channel, message]);
    for (const wake of this.waiting.splice(0)) wake();
  };

  /** The messages received on `channel` so far. */
  on(channel: string): string[] {
    return this.received.filter(([c]) => c === channel).map(([, message]) => message);
  }

  async next(channel: string): Promise<string> {
    for (;;) {
      const found = this.received.find(([c]) => c === channel);
      if (found) return found[1];
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }
}

/** Scripts whose replies cover what our Lua returns: integers, strings, nested arrays, nil and false. */
const SHAPES = new RedisScript(
  'shapes',
  "return {KEYS[1], ARGV[1], 7, {1, 'x', {2}}, false, redis.call('zrange', KEYS[1], 0, -1, 'withscores')}",
);
const NIL = new RedisScript('nil', 'return nil');
const FAILS = new RedisScript('fails', "return redis.error_reply('MYERR nope')");

/** The commands whose reply shapes the module may meet, run on both transports over the same data. */
async function replyShapes(transport: RedisTransport, key: string): Promise<unknown[]> {
  const z = `${key}:z`;
  const h = `${key}:h`;
  await transport.command('del', z, h, `${key}:f`);
  const replies: unknown[] = [];
  replies.push(await transport.command('zadd', z, '1.5', 'a', '2', 'b', '3', 'c', '0.1', 'd'));
  replies.push(await transport.command('zrange', z, 0, -1, 'WITHSCORES'));
  replies.push(await transport.command('zrangebyscore', z, '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, 2));
  replies.push(await transport.command('zscore', z, 'a'));
  replies.push(await transport.command('zscore', z, 'missing'));
  replies.push(await transport.command('zpopmin', z));
  replies.push(await transport.command('zpopmin', z, 2));
  replies.push(await transport.command('bzpopmin', z, '0.1'));
  replies.push(await transport.command('bzpopmin', `${key}:empty`, '0.01'));
  replies.push(await transport.command('hset', h, 'f', 'v', 'g', 'w'));
  replies.push(await transport.command('incrbyfloat', `${key}:f`, '1.5'));
  replies.push(await transport.command('get', `${key}:missing`));
  replies.push(await transport.command('exists', h));
  replies.push(await transport.command('pttl', h));
  replies.push(await transport.command('lrange', `${key}:none`, 0, -1));
  const time = await transport.command<unknown[]>('time');
  replies.push(time.map((part) => typeof part));
  replies.push(await transport.runScript(SHAPES, [`${key}:z2`], ['arg']));
  replies.push(await transport.runScript(NIL, [key], []));
  return replies;
}

describe('NodeRedisTransport on a single Redis', () => {
  const server = useLocalRedisServer();
  const transports = useResource(
    'the transports',
    async () => {
      const policy = recordingPolicy();
      const built = new NodeRedisTransport({ options: { url: server.url }, cluster: false }, policy);
      const ioredis = new IoredisTransport(server.url, policy);
      const resp2 = createClient({ url: server.url, RESP: 2 });
      const resp3 = createClient({ url: server.url, RESP: 3 });
      for (const client of [resp2, resp3]) client.on('error', () => undefined);
      await Promise.all([resp2.connect(), resp3.connect()]);
      const overResp2 = new NodeRedisTransport({ client: resp2 as unknown as NodeRedisClient }, policy);
      const overResp3 = new NodeRedisTransport({ client: resp3 as unknown as NodeRedisClient }, policy);
      await Promise.all([built.verify(2_000), ioredis.verify(2_000), overResp2.verify(2_000), overResp3.verify(2_000)]);
      return { policy, built, ioredis, resp2, resp3, overResp2, overResp3 };
    },
    async (t) => {
      const deadline = performance.now() + 1_000;
      await Promise.all([t.built.close(deadline), t.ioredis.close(deadline), t.overResp2.close(deadline), t.overResp3.close(deadline)]);
      t.resp2.destroy();
      t.resp3.destroy();
    },
  );

  it('is detected by shape: a client is a node-redis client, not a cluster; ioredis is neither', () => {
    expect(isNodeRedisClient(transports.resp2)).toBe(true);
    expect(isNodeRedisCluster(transports.resp2)).toBe(false);
    const ioredis = new Redis({ lazyConnect: true });
    expect(isNodeRedisClient(ioredis)).toBe(false);
    expect(isNodeRedisCluster(ioredis)).toBe(false);
    ioredis.disconnect();
  });

  it('says what it is: no re-sends, PUBLISH, no cluster, an endpoint without the password', () => {
    const t = new NodeRedisTransport({ options: { url: 'redis://user:secret@127.0.0.1:1' }, cluster: false }, recordingPolicy());
    expect(t.resendsUnanswered).toBe(false);
    expect(t.isCluster).toBe(false);
    expect(t.publishCommand).toBe('publish');
    expect(t.endpoint).toBe('127.0.0.1:1');
    expect(t.reachability).toBeUndefined();
  });

  it.each(['built', 'overResp2', 'overResp3'] as const)('gives the replies the ioredis transport gives (%s)', async (which) => {
    const key = uniquePrefix('shape');
    const expected = await replyShapes(transports.ioredis, `{${key}}`);
    const actual = await replyShapes(transports[which], `{${key}}`);
    expect(actual).toEqual(expected);
    // Spot checks of the RESP2 shapes themselves.
    expect(actual[1]).toEqual(['d', '0.10000000000000001', 'a', '1.5', 'b', '2', 'c', '3']);
    // A map as RESP2 sends it (ioredis' own `call` turns HGETALL into an object: not compared).
    expect(await transports[which].command('hgetall', `{${key}}:h`)).toEqual(['f', 'v', 'g', 'w']);
  });

  it('runs a script by SHA, and sends its body again after SCRIPT FLUSH (NOSCRIPT)', async () => {
    const t = transports.built;
    const key = `{${uniquePrefix('script')}}`;
    const first = await t.runScript(SHAPES, [key], ['a']);
    await t.command('script', 'flush');
    expect(await t.command('script', 'exists', SHAPES.sha)).toEqual([0]);
    expect(await t.runScript(SHAPES, [key], ['a'])).toEqual(first);
    expect(await t.command('script', 'exists', SHAPES.sha)).toEqual([1]);
    await t.command('script', 'flush');
    await t.loadScripts([SHAPES]);
    expect(await t.command('script', 'exists', SHAPES.sha)).toEqual([1]);
  });

  it("rejects a script's error with RedisCommandError and a refused command with a 'ReplyError'", async () => {
    await expect(transports.built.runScript(FAILS, ['k'], [])).rejects.toThrow(RedisCommandError);
    await expect(transports.built.runScript(FAILS, ['k'], [])).rejects.toThrow(/MYERR nope/);
    const refused = await timed(transports.overResp3.command('xinfo', 'nonsense'));
    expect((refused.error as Error).name).toBe('ReplyError');
    expect((refused.error as Error).message).toMatch(/^ERR /);
  });

  it('delivers pub/sub messages to a subscriber of its own, and stops after unsubscribe', async () => {
    const subscriber = transports.overResp3.openSubscriber('test');
    const inbox = new Inbox();
    subscriber.onMessage(inbox.listener);
    let readies = 0;
    subscriber.onReady(() => readies++);
    await subscriber.connect();
    expect(subscriber.ready).toBe(true);
    const channel = uniquePrefix('ch');
    await subscriber.subscribe(channel);
    expect(await transports.built.command(transports.built.publishCommand, channel, 'hello')).toBe(1);
    await expect(inbox.next(channel)).resolves.toBe('hello');
    // A repeated subscribe resolves only after the messages Redis queued before it were heard.
    for (let n = 0; n < 20; n++) {
      await transports.built.command('publish', channel, `m${n}`);
      await subscriber.subscribe(channel);
      expect(inbox.on(channel)).toContain(`m${n}`);
    }
    await subscriber.unsubscribe(channel);
    expect(await transports.built.command('publish', channel, 'gone')).toBe(0);
    await subscriber.close();
    expect(subscriber.ready).toBe(false);
  });

  it('subscribes its channels again after its connection was cut, and says it is ready again', async () => {
    const subscriber = transports.built.openSubscriber('test');
    const inbox = new Inbox();
    subscriber.onMessage(inbox.listener);
    let readies = 0;
    subscriber.onReady(() => readies++);
    await subscriber.connect();
    const channel = uniquePrefix('again');
    await subscriber.subscribe(channel);
    await transports.built.command('client', 'kill', 'type', 'pubsub');
    await waitUntil(() => readies >= 2);
    // Published until the resubscription landed: no fixed wait for it.
    await waitUntil(async () => (await transports.built.command<number>('publish', channel, 'back')) === 1);
    await expect(inbox.next(channel)).resolves.toBe('back');
    await subscriber.close();
  });

  it('wakes a blocking pop when a member arrives, and times a pop out with false', async () => {
    const reader = transports.overResp3.openBlockingReader('test');
    const key = uniquePrefix('marker');
    expect(await reader.popMin(key, 50)).toBe(false);
    const popping = reader.popMin(key, 30_000);
    // The pop is parked once Redis counts a blocked client on our connection.
    await expect(
      waitUntil(async () => Number(/blocked_clients:(\d+)/.exec(await transports.built.command<string>('info', 'clients'))?.[1]) > 0),
    ).resolves.toBe(true);
    await transports.built.command('zadd', key, 1, 'job');
    await expect(popping).resolves.toBe(true);
    await reader.close();
  });

  it('reports its blocking reader lost when its socket drops, and never reconnects it', async () => {
    const reader = transports.built.openBlockingReader('test');
    const key = uniquePrefix('marker');
    let lost = 0;
    reader.onLost(() => lost++);
    const popping = timed(reader.popMin(key, 30_000));
    await waitUntil(async () => Number(/blocked_clients:(\d+)/.exec(await transports.built.command<string>('info', 'clients'))?.[1]) > 0);
    await transports.built.command('client', 'kill', 'type', 'normal', 'skipme', 'yes');
    const outcome = await popping;
    expect(outcome.error).toBeInstanceOf(Error);
    await waitUntil(() => lost === 1);
    await reader.close();
    expect(lost).toBe(1);
  });

  it('leaves no connection open when it closes in the turn its blocking reader and a scratch start connecting', async () => {
    // node-redis 6.3 finishes a connect that destroy() catches before its first I/O and leaves the
    // socket open (isOpen false, isReady true): the process never exits (Jest: "a worker process
    // has failed to exit gracefully", seen in the node-redis lane).
    const clients = async () => (await transports.ioredis.command<string>('client', 'list')).trim().split('\n').length;
    const before = await clients();
    const t = new NodeRedisTransport({ options: { url: server.url }, cluster: false }, recordingPolicy());
    await t.verify(2_000);
    const popping = t
      .openBlockingReader('test')
      .popMin(uniquePrefix('marker'), 30_000)
      .catch((error: unknown) => error);
    const scratch = t.openScratch();
    await Promise.all([scratch.close(), t.close(performance.now() + 1_000)]);
    expect(await popping).toBeInstanceOf(Error);
    let now = 0;
    await waitFor(
      async () => (now = await clients()) === before,
      5_000,
      () => `${before} connections (${now} now)`,
    );
  });

  it('waits for replicas on the connection that wrote (WAIT: none on a lone server)', async () => {
    const key = uniquePrefix('wait');
    await transports.built.command('set', key, '1');
    expect(await transports.built.waitForReplicas(key, 0, 100)).toBe(0);
  });

  it('runs a command on every master: the one server here', async () => {
    const replies = await transports.built.commandOnEveryMaster(1_000, 'config', 'get', 'maxmemory-policy');
    expect(replies).toEqual([{ endpoint: transports.built.endpoint, reply: ['maxmemory-policy', 'noeviction'] }]);
  });

  it('scans keys by pattern, bounded by maxKeys', async () => {
    const prefix = uniquePrefix('scan');
    for (let i = 0; i < 25; i++) await transports.built.command('set', `${prefix}:${i}`, i);
    const all = await transports.built.scanKeys(`${prefix}:*`, 100);
    expect(all.keys).toHaveLength(25);
    expect(all.truncated).toBe(false);
    const some = await transports.overResp3.scanKeys(`${prefix}:*`, 10);
    expect(some.keys).toHaveLength(10);
    expect(some.truncated).toBe(true);
  });

  it('opens a scratch connection that works after the transport closed and is closed by its user', async () => {
    const t = new NodeRedisTransport({ options: { url: server.url }, cluster: false }, recordingPolicy());
    await t.verify(2_000);
    const scratch = t.openScratch();
    await t.close(performance.now() + 1_000);
    expect(t.ended).toBe(true);
    const key = uniquePrefix('scratch');
    await scratch.command('set', key, 'v');
    expect((await scratch.scanKeys(`${key}*`, 10)).keys).toEqual([key]);
    await scratch.close();
  });

  it("closes only its own connections: the application's client stays open", async () => {
    const client = createClient({ url: server.url });
    client.on('error', () => undefined);
    await client.connect();
    const t = new NodeRedisTransport({ client: client as unknown as NodeRedisClient }, recordingPolicy());
    await t.verify(2_000);
    const subscriber = t.openSubscriber('test');
    await subscriber.connect();
    await t.close(performance.now() + 1_000);
    expect(subscriber.ready).toBe(false);
    expect(t.ended).toBe(true);
    expect(client.isOpen).toBe(true);
    expect(await client.ping()).toBe('PONG');
    client.destroy();
  });
});

describe('NodeRedisTransport when Redis cannot be reached', () => {
  const guarded = useLocalRedisServer({ args: ['--requirepass', 'secret'] });
  const server = useLocalRedisServer();

  it('fails verify with the refusal (ECONNREFUSED) and advice', async () => {
    const port = await findFreePort();
    const t = new NodeRedisTransport({ options: { url: `redis://127.0.0.1:${port}` }, cluster: false }, recordingPolicy());
    const outcome = await timed(t.verify(5_000));
    expect(outcome.error).toBeInstanceOf(RedisConnectionError);
    expect((outcome.error as Error).message).toMatch(new RegExp(`Cannot reach Redis at 127.0.0.1:${port}: .*ECONNREFUSED`));
    expect(outcome.ms).toBeLessThan(2_000);
    await t.close(performance.now() + 1_000);
  });

  it("fails a cluster's verify with its root nodes' refusal", async () => {
    const port = await findFreePort();
    const t = new NodeRedisTransport({ options: { rootNodes: [{ url: `redis://127.0.0.1:${port}` }] }, cluster: true }, recordingPolicy());
    expect(t.endpoint).toBe(`cluster 127.0.0.1:${port}`);
    const outcome = await timed(t.verify(5_000));
    expect(outcome.error).toBeInstanceOf(RedisConnectionError);
    expect((outcome.error as Error).message).toMatch(/ECONNREFUSED/);
    await t.close(performance.now() + 1_000);
  });

  it('fails verify with the server refusing the password (WRONGPASS)', async () => {
    const url = new URL(guarded.url);
    url.password = 'wrong';
    const t = new NodeRedisTransport({ options: { url: url.toString() }, cluster: false }, recordingPolicy());
    const outcome = await timed(t.verify(5_000));
    expect(outcome.error).toBeInstanceOf(RedisConnectionError);
    expect((outcome.error as Error).message).toMatch(/WRONGPASS.*Authentication failed/);
    await t.close(performance.now() + 1_000);
  });

  it("refuses a connection with node-redis' keyPrefix, which raw commands ignore", () => {
    expect(() => new NodeRedisTransport({ options: { url: server.url, keyPrefix: 'app:' }, cluster: false }, recordingPolicy())).toThrow(
      InvalidOptionsError,
    );
    const client = createClient({ url: server.url, keyPrefix: 'app:' });
    expect(() => new NodeRedisTransport({ client: client as unknown as NodeRedisClient }, recordingPolicy())).toThrow(
      /redis\.client.*keyPrefix/s,
    );
  });

  it('closes by its deadline while Redis is stopped', async () => {
    const t = new NodeRedisTransport({ options: { url: server.url }, cluster: false }, recordingPolicy(1_000));
    await t.verify(2_000);
    const reader = t.openBlockingReader('test');
    const popping = timed(reader.popMin(uniquePrefix('m'), 30_000));
    let bringBack!: () => void;
    const restarted = server.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
    try {
      await waitUntil(() => !t.ready);
      const pending = timed(t.command('ping'));
      const closing = await timed(t.close(performance.now() + 300));
      expect(closing.ms).toBeLessThan(1_000);
      expect((await pending).error).toBeInstanceOf(RedisConnectionError);
      expect((await popping).error).toBeDefined();
      expect(t.ended).toBe(true);
    } finally {
      bringBack();
      await restarted;
    }
  });

  it('settles a call within the bound with RedisConnectionError while Redis is stopped', async () => {
    const policy = recordingPolicy(1_000);
    const t = new NodeRedisTransport({ options: { url: server.url }, cluster: false }, policy);
    await t.verify(2_000);
    let bringBack!: () => void;
    const restarted = server.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
    try {
      await waitUntil(() => policy.errors.length > 0);
      const first = await timed(t.command('ping'));
      expect(first.error).toBeInstanceOf(RedisConnectionError);
      expect((first.error as Error).message).toMatch(/ECONNREFUSED|closed/);
      expect(first.ms).toBeLessThan(2_500);
      // Down for longer than the bound: at once.
      await waitUntil(() => !t.ready);
      const script = await timed(t.runScript(SHAPES, ['k'], ['a']));
      expect(script.error).toBeInstanceOf(RedisConnectionError);
      expect(script.ms).toBeLessThan(1_500);
    } finally {
      bringBack();
      await restarted;
    }
    await waitUntil(() => t.ready, 10_000);
    expect(await t.command('ping')).toBe('PONG');
    await t.close(performance.now() + 1_000);
  });
});

describe('NodeRedisTransport when the socket drops with a command in flight', () => {
  const proxy = useResource(
    'the fault proxy',
    async () => FaultProxy.start({ port: Number(new URL(process.env.REDIS_URL!).port) }),
    (p) => p.stop(),
  );

  it('rejects the command (never re-sends it) and works again after the reconnect', async () => {
    const t = new NodeRedisTransport({ options: { url: proxy.url }, cluster: false }, recordingPolicy());
    await t.verify(2_000);
    const key = `{${uniquePrefix('inflight')}}`;
    await t.runScript(SHAPES, [key], ['warm']); // loaded: the next run is one EVALSHA
    const sent = proxy.observe(FaultProxy.script(SHAPES));
    const lost = proxy.loseReply(FaultProxy.script(SHAPES));
    const outcome = await timed(t.runScript(SHAPES, [key], ['lost']));
    await lost;
    expect(outcome.error).toBeInstanceOf(RedisConnectionError);
    expect((outcome.error as Error).message).toMatch(/ECONNRESET|Socket closed unexpectedly/);
    await waitUntil(() => t.ready, 10_000);
    expect(await t.runScript(SHAPES, [key], ['after'])).toBeDefined();
    expect(sent.count).toBe(2); // the lost one once, then the next call: nothing re-sent
    sent.stop();
    await t.close(performance.now() + 1_000);
  });
});

describe('NodeRedisTransport when Redis goes silent on an open connection', () => {
  const proxy = useResource(
    'the fault proxy',
    async () => FaultProxy.start({ port: Number(new URL(process.env.REDIS_URL!).port) }),
    (p) => p.stop(),
  );

  it('stops waiting for a reply after the bound with RedisConnectionError, and answers again once the link heals', async () => {
    const t = new NodeRedisTransport({ options: { url: proxy.url }, cluster: false }, recordingPolicy(500));
    await t.verify(2_000);
    try {
      proxy.blackhole();
      const silent = await timed(t.runScript(SHAPES, [`{${uniquePrefix('silent')}}`], ['a']));
      expect(silent.error).toBeInstanceOf(RedisConnectionError);
      expect((silent.error as Error).message).toMatch(/no reply within 500 ms/);
      expect(silent.ms).toBeGreaterThanOrEqual(450);
      expect(silent.ms).toBeLessThan(1_500);
      proxy.heal();
      expect(await t.command('ping')).toBe('PONG');
    } finally {
      proxy.heal();
      await t.close(performance.now() + 1_000);
    }
  });
});

describe('NodeRedisTransport on a Redis Cluster', () => {
  const shared = useSharedTestCluster();
  const transports = useResource(
    'the cluster transports',
    async () => {
      const nodes = shared.nodes();
      const policy = recordingPolicy();
      const built = new NodeRedisTransport(
        { options: { rootNodes: nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) }, cluster: true },
        policy,
      );
      const ioredis = new IoredisTransport({ cluster: [...nodes] }, policy);
      const cluster = createCluster({ rootNodes: nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
      cluster.on('error', () => undefined);
      await cluster.connect();
      const given = new NodeRedisTransport({ client: cluster as unknown as NodeRedisCluster }, policy);
      await Promise.all([built.verify(5_000), ioredis.verify(5_000), given.verify(5_000)]);
      return { built, ioredis, given, cluster };
    },
    async (t) => {
      const deadline = performance.now() + 1_000;
      await Promise.all([t.built.close(deadline), t.ioredis.close(deadline), t.given.close(deadline)]);
      t.cluster.destroy();
    },
  );

  it('is a cluster: detected as one, SPUBLISH', () => {
    expect(isNodeRedisCluster(transports.cluster)).toBe(true);
    expect(isNodeRedisClient(transports.cluster)).toBe(false);
    expect(isNodeRedisCluster(new Cluster([], { lazyConnect: true }))).toBe(false);
    expect(transports.built.isCluster).toBe(true);
    expect(transports.built.publishCommand).toBe('spublish');
  });

  it('gives the replies the ioredis transport gives, routed by key', async () => {
    for (const tag of ['a', 'b', 'c', 'd']) {
      const key = `{${uniquePrefix(tag)}}`;
      const expected = await replyShapes(transports.ioredis, key);
      expect(await replyShapes(transports.built, key)).toEqual(expected);
      expect(await replyShapes(transports.given, key)).toEqual(expected);
    }
  });

  it('sends a script body again on every master after SCRIPT FLUSH', async () => {
    const flushed = await transports.built.commandOnEveryMaster(2_000, 'script', 'flush');
    expect(flushed.length).toBeGreaterThanOrEqual(3);
    expect(flushed.every((r) => r.reply === 'OK')).toBe(true);
    for (const tag of ['a', 'b', 'c', 'd', 'e', 'f']) {
      expect(await transports.built.runScript(NIL, [`{${tag}}`], [])).toBeNull();
    }
    await transports.built.loadScripts([SHAPES]);
    const exists = await transports.built.commandOnEveryMaster(2_000, 'script', 'exists', SHAPES.sha);
    expect(exists.map((r) => r.reply)).toEqual(exists.map(() => [1]));
  });

  it('scans every master', async () => {
    const prefix = uniquePrefix('cscan');
    const keys = Array.from({ length: 30 }, (_, i) => `${prefix}:{${i}}`);
    for (const key of keys) await transports.built.command('set', key, '1');
    const found = await transports.built.scanKeys(`${prefix}:*`, 1_000);
    expect(found.keys.sort()).toEqual([...keys].sort());
    expect(found.truncated).toBe(false);
  });

  it("delivers sharded pub/sub messages on every shard's channels", async () => {
    const subscriber = transports.given.openSubscriber('test');
    const inbox = new Inbox();
    subscriber.onMessage(inbox.listener);
    await subscriber.connect();
    const channels = ['a', 'b', 'c', 'd', 'e', 'f'].map((tag) => `${uniquePrefix('sch')}:{${tag}}:wake`);
    for (const channel of channels) await subscriber.subscribe(channel);
    for (const channel of channels) expect(await transports.built.command('spublish', channel, `to ${channel}`)).toBe(1);
    for (const channel of channels) await expect(inbox.next(channel)).resolves.toBe(`to ${channel}`);
    expect(subscriber.ready).toBe(true);
    // A repeated subscribe resolves only after the messages Redis queued before it were heard.
    for (const channel of channels) {
      await transports.built.command('spublish', channel, 'again');
      await subscriber.subscribe(channel);
      expect(inbox.on(channel)).toContain('again');
    }
    await subscriber.close();
  });

  it('wakes a blocking pop on the slot of its key', async () => {
    const reader = transports.built.openBlockingReader('test');
    const key = `{${uniquePrefix('cmarker')}}:marker`;
    expect(await reader.popMin(key, 50)).toBe(false);
    const popping = reader.popMin(key, 30_000);
    await waitUntil(async () => {
      const infos = await transports.built.commandOnEveryMaster<string>(1_000, 'info', 'clients');
      return infos.some((r) => Number(/blocked_clients:(\d+)/.exec(r.reply ?? '')?.[1]) > 0);
    });
    await transports.built.command('zadd', key, 1, 'job');
    await expect(popping).resolves.toBe(true);
    await reader.close();
  });

  it("closes only its own connections: the application's cluster stays open", async () => {
    const t = new NodeRedisTransport({ client: transports.cluster as unknown as NodeRedisCluster }, recordingPolicy());
    await t.verify(5_000);
    const subscriber = t.openSubscriber('test');
    await subscriber.connect();
    await subscriber.subscribe(`${uniquePrefix('own')}:{x}`);
    await t.close(performance.now() + 1_000);
    expect(t.ended).toBe(true);
    expect(transports.cluster.isOpen).toBe(true);
    expect(await transports.given.command('ping')).toBe('PONG');
  });

  it("waits for the slot master's replica (WAIT on the master's connection)", async () => {
    const key = `{${uniquePrefix('cwait')}}`;
    await transports.built.command('set', key, '1');
    expect(await transports.built.waitForReplicas(key, 1, 5_000)).toBe(1);
  });
});

/** Resolves once `check` holds, polled (see `waitFor`). */
function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<true> {
  return waitFor(check, timeoutMs, 'the condition') as Promise<true>;
}
