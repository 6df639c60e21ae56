import { Redis } from 'ioredis';
import { FaultProxy } from '../../tools/fault-proxy';
import { testRedisUrl, uniquePrefix } from '../support/test-app';

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
});
