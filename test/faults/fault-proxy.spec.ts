import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';

/** The fault proxy itself: a lost reply makes ioredis run the command twice and resolve once. */
describe('FaultProxy.loseReply', () => {
  let proxy: FaultProxy;
  let client: Redis;
  let direct: Redis;

  beforeAll(async () => {
    const port = Number(new URL(testRedisUrl()).port);
    proxy = await FaultProxy.start({ port });
    client = new Redis(proxy.url);
    direct = new Redis(testRedisUrl());
  });
  afterAll(async () => {
    client.disconnect();
    direct.disconnect();
    await proxy.stop();
  });

  it('drops the reply of the chosen command after Redis ran it; the re-sent command runs a second time', async () => {
    const key = `${uniquePrefix('proxy')}:n`;
    const accepted = proxy.accepted;
    const lost = proxy.loseReply((args) => args[0].toLowerCase() === 'incr' && args[1] === key);
    const reply = await client.incr(key);
    expect(await lost).toEqual(['incr', key]);
    expect(reply).toBe(2);
    expect(await direct.get(key)).toBe('2');
    expect(proxy.accepted).toBeGreaterThan(accepted);
  });

  it('hits the nth matching command and leaves the commands before it answered', async () => {
    const key = `${uniquePrefix('proxy')}:list`;
    const lost = proxy.loseReply((args) => args[0].toLowerCase() === 'rpush' && args[1] === key, 3);
    const replies = await Promise.all([1, 2, 3, 4].map((n) => client.rpush(key, String(n))));
    await lost;
    // The third push (and the fourth, pipelined behind it) lost their replies and ran again.
    expect(replies.slice(0, 2)).toEqual([1, 2]);
    expect(await direct.lrange(key, 0, -1)).toEqual(['1', '2', '3', '4', '3', '4']);
    expect(proxy.pendingLostReplies).toBe(0);
  });

  it('matches a script by its SHA (EVALSHA) and by its body (EVAL)', async () => {
    const source = "return redis.call('incr', KEYS[1])";
    const sha = (await direct.script('LOAD', source)) as string;
    const key = `${uniquePrefix('proxy')}:script`;
    const lost = proxy.loseReply(FaultProxy.script({ sha, source }, ([k]) => k === key));
    expect(await client.evalsha(sha, 1, key)).toBe(2);
    await lost;
    const again = proxy.loseReply(FaultProxy.script({ sha, source }));
    expect(await client.eval(source, 1, key)).toBe(4);
    await again;
  });

  it('reports the dropped reply, so a refused command (NOSCRIPT) is told apart from one that ran', async () => {
    const source = `return redis.call('incr', KEYS[1]) -- ${uniquePrefix('unloaded')}`;
    const sha = createHash('sha1').update(source).digest('hex');
    const key = `${uniquePrefix('proxy')}:detailed`;
    const refused = proxy.loseReplyDetailed(FaultProxy.script({ sha, source }, ([k]) => k === key));
    // Not cached: EVALSHA is refused (that reply is lost, and the re-sent EVALSHA refused again).
    await expect(client.evalsha(sha, 1, key)).rejects.toThrow(/NOSCRIPT/);
    expect((await refused).reply).toMatch(/^-NOSCRIPT/);
    expect(await direct.get(key)).toBeNull();
    const ran = proxy.loseReplyDetailed(FaultProxy.script({ sha, source }, ([k]) => k === key));
    expect(await client.eval(source, 1, key)).toBe(2);
    expect(await ran).toEqual({ args: ['eval', source, '1', key], reply: ':1\r\n' });
  });

  it('observe() counts matching commands on their way to Redis, the re-sent one included', async () => {
    const key = `${uniquePrefix('proxy')}:observed`;
    const isIncr = (args: readonly string[]) => args[0].toLowerCase() === 'incr' && args[1] === key;
    const seen = proxy.observe(isIncr);
    const lost = proxy.loseReply(isIncr);
    expect(await client.incr(key)).toBe(2);
    await lost;
    expect(seen.count).toBe(2);
    seen.stop();
    await client.incr(key);
    expect(seen.count).toBe(2);
  });

  it('hits the re-sent command when the connection of the chosen one dies before its reply', async () => {
    const key = `${uniquePrefix('proxy')}:blocked`;
    const isPop = (args: readonly string[]) => args[0].toLowerCase() === 'blpop' && args[1] === key;
    const seen = proxy.observe(isPop);
    const lost = proxy.loseReplyDetailed(isPop);
    const popped = client.blpop(key, 0);
    await waitFor(() => seen.count === 1, 5_000, 'the BLPOP to pass the proxy');
    proxy.resetAll(); // no reply yet: the BLPOP is re-sent after the reconnect
    await waitFor(() => seen.count === 2, 5_000, 'the BLPOP to be re-sent');
    await direct.rpush(key, 'a', 'b');
    // The re-sent BLPOP popped 'a' and lost that reply; sent a third time, it pops 'b'.
    expect(await popped).toEqual([key, 'b']);
    expect((await lost).reply).toContain('a');
    expect(seen.count).toBe(3);
    expect(proxy.pendingLostReplies).toBe(0);
    seen.stop();
  });
});

/** Latency delays bytes; it never reorders them (no TCP connection does, and replies would be paired with the wrong commands). */
describe('FaultProxy latency', () => {
  it('keeps the byte order when the latency is lowered while bytes are still delayed', async () => {
    const port = Number(new URL(testRedisUrl()).port);
    const proxy = await FaultProxy.start({ port });
    const client = new Redis(proxy.url);
    try {
      await client.ping();
      const key = `${uniquePrefix('proxy')}:order`;
      proxy.setLatency(150);
      const slow = client.echo('sent-while-slow');
      await sleep(20);
      proxy.setLatency(0);
      const fast = client.incr(key);
      // Each reply belongs to its own command: the slow one did not get the INCR's integer.
      expect(await Promise.all([slow, fast])).toEqual(['sent-while-slow', 1]);
    } finally {
      client.disconnect();
      await proxy.stop();
    }
  });
});

/** An outage of one link: connections are reset and refused until restore(). */
describe('FaultProxy.cut', () => {
  it('resets the open connections and every new one until restore(), then lets the client reconnect', async () => {
    const port = Number(new URL(testRedisUrl()).port);
    const proxy = await FaultProxy.start({ port });
    const client = new Redis(proxy.url, { maxRetriesPerRequest: null, retryStrategy: () => 50 });
    try {
      await client.ping();
      const accepted = proxy.accepted;
      proxy.cut();
      const answered = client.echo('after-the-outage');
      // The client keeps trying: each try is accepted and dropped at once, none gets through.
      await waitFor(() => proxy.accepted >= accepted + 2, 5_000, 'the client to try to reconnect');
      expect(proxy.openConnections).toBe(0);
      proxy.restore();
      expect(await answered).toBe('after-the-outage');
      expect(proxy.openConnections).toBe(1);
    } finally {
      client.disconnect();
      await proxy.stop();
    }
  });
});
