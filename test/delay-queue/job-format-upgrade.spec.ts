import { jest } from '@jest/globals';
import type { Redis } from 'ioredis';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { DUE_SCORE_SLOTS } from '../../lib/delay-queue/jobs/delay-queue.constants.js';
import { RedisScript } from '../../lib/core/redis/redis-script.js';
import { bodyOfTail, encodeBodyTail, encodeJobBody, splitBody } from '../../lib/delay-queue/jobs/job-codec.js';
import { LUA_JOB_HEADER } from '../../lib/delay-queue/scripts/job-header-lua-snippet.js';
import { TopicInspector } from '../../lib/delay-queue/topic-inspector.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { rawRedis } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';

/*
 * A rolling upgrade: jobs stored by release 0.1 (format 1, the literal bodies below are what its
 * schedule, claim, progress and fail scripts wrote) are read, claimed, progressed, retried,
 * recovered and listed by this version, which rewrites a job in format 2 the first time it changes it.
 */
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const V1 = {
  fresh: '{"g":0,"a":0,"c":1700000000000,"m":null,"b":null,"e":null,"p":{"n":1}}',
  /** Claimed once and failed, with its own retry options, a trace, a progress and its last error (message and stack). */
  failedOnce:
    `{"g":1795948789064011,"a":1,"c":1700000000001,"m":3,"b":[10,2,3600000,0],"t":"${TRACEPARENT}",` +
    `"o":"{\\"done\\":1,\\"note\\":\\",\\\\\\"e\\\\\\":\\"}",` +
    `"e":["Error: boom ,\\"p\\": x","Error: boom\\n    at h (f.js:1:1)"],"p":[1,"two",{"three":3}]}`,
  grouped: '{"g":0,"a":0,"c":1700000000002,"m":null,"b":null,"q":"order:42","e":null,"p":"g1"}',
  dead: '{"g":1795948789064012,"a":5,"c":1700000000003,"m":null,"b":null,"e":"Error: gone","p":{"n":4}}',
  /** On its last attempt (maxAttempts 2), its visibility passed: the recovery buries it. */
  expiring: '{"g":1795948789064013,"a":2,"c":1700000000004,"m":2,"b":null,"e":null,"p":5}',
};

describe('jobs stored in format 1 (release 0.1) under this version', () => {
  let t: DelayTestApp;
  let redis: Redis;

  beforeAll(async () => {
    muteNestLogger('warn', 'error'); // a failure and a dead letter on purpose
    t = await createDelayApp({ delayQueue: { backoff: { delay: 20, jitter: 0 } } });
    redis = rawRedis();
  });
  afterAll(async () => {
    await t.close();
    redis.disconnect();
    jest.restoreAllMocks();
  });

  async function store(topic: string, id: string, body: string, where: 'due' | 'dead' | 'active', score = Date.now() * DUE_SCORE_SLOTS) {
    const keys = new RedisKeySpace(t.keyPrefix).topic(topic);
    await redis.hset(keys.jobs, id, body);
    await redis.zadd(keys[where], score, id);
    return keys;
  }

  it('reads and rewrites a header in Lua exactly as the codec does (both made from the field table)', async () => {
    const script = new RedisScript(
      'jobHeaderParity',
      `local job = jobHeader(ARGV[1])
      if not job then return false end
      return { withJobFields(ARGV[1], {}), jobField(ARGV[1], 'token'), jobField(ARGV[1], 'group') or '', newJobBody(7, ARGV[2]) }`,
      [LUA_JOB_HEADER],
    );
    const tail = encodeBodyTail('{"n":[1,2]}', { maxAttempts: 3, traceparent: TRACEPARENT, group: 'order:1' });
    const v2 = [bodyOfTail(tail, 5), encodeJobBody({ token: '9', attempts: '1', createdAt: '5', lastError: '"x"' }, '"p"')];
    for (const body of [...Object.values(V1), ...v2]) {
      const { fields, payloadJson } = splitBody(body)!;
      const [rewritten, token, group, fresh] = await script.run<string[]>(redis, [], [body, tail]);
      expect({ rewritten, token, group, fresh }).toEqual({
        rewritten: encodeJobBody(fields, payloadJson),
        token: fields.token ?? '0',
        group: fields.group ?? '',
        fresh: bodyOfTail(tail, 7),
      });
    }
    expect(await script.run(redis, [], ['not a job', tail])).toBeNull();
  });

  it('reads them with get() and list(), field by field', async () => {
    await store('v1.read', 'fresh', V1.fresh, 'due');
    await store('v1.read', 'failed', V1.failedOnce, 'due', (Date.now() + 3_600_000) * DUE_SCORE_SLOTS);
    await store('v1.read', 'dead', V1.dead, 'dead', Date.now());
    expect(await t.queue.get('v1.read', 'fresh')).toMatchObject({ state: 'due', attempts: 0, payload: { n: 1 } });
    expect((await t.queue.get('v1.read', 'fresh'))!.createdAt.getTime()).toBe(1_700_000_000_000);
    expect(await t.queue.get('v1.read', 'failed')).toMatchObject({
      state: 'scheduled',
      attempts: 1,
      maxAttempts: 3,
      progress: { done: 1, note: ',"e":' },
      lastError: 'Error: boom ,"p": x',
      payload: [1, 'two', { three: 3 }],
    });
    expect(await t.queue.get('v1.read', 'dead')).toMatchObject({ state: 'dead', attempts: 5, lastError: 'Error: gone', payload: { n: 4 } });
    const inspector = t.app.get(TopicInspector);
    const scheduled = await inspector.listJobs('v1.read', 'scheduled', 10, 100);
    expect(scheduled.jobs).toMatchObject([{ id: 'failed', attempts: 1, maxAttempts: 3, progress: { done: 1, note: ',"e":' } }]);
    const listed = async (state: 'dead' | 'due') => (await inspector.listJobs('v1.read', state, 10, 100)).jobs;
    expect(await listed('dead')).toMatchObject([{ id: 'dead', attempts: 5, lastError: 'Error: gone' }]);
    expect(await listed('due')).toMatchObject([{ id: 'fresh', payloadPreview: '{"n":1}', payloadLength: 7 }]);
  });

  it('claims, progresses, retries with the stored backoff and attempts, and acknowledges them', async () => {
    const keys = await store('v1.run', 'failed', V1.failedOnce, 'due');
    const seen: Array<{ attempt: number; token: string; payload: unknown }> = [];
    const consumer = t.queue.consume(
      'v1.run',
      async (payload, job) => {
        seen.push({ attempt: job.attempt, token: job.fencingToken, payload });
        await job.progress({ done: job.attempt });
        if (job.attempt === 2) throw new Error('second try fails');
      },
      { maxAttempts: 10 },
    );
    try {
      await waitFor(async () => (await t.queue.get('v1.run', 'failed')) === null, 10_000, 'the job to complete');
    } finally {
      await consumer.close();
    }
    expect(seen.map((s) => [s.attempt, s.payload])).toEqual([
      [2, [1, 'two', { three: 3 }]],
      [3, [1, 'two', { three: 3 }]],
    ]);
    expect(BigInt(seen[0]!.token)).toBeGreaterThan(1_795_948_789_064_011n);
    expect(BigInt(seen[1]!.token)).toBeGreaterThan(BigInt(seen[0]!.token));
    expect(await redis.hexists(keys.jobs, 'failed')).toBe(0);
  });

  it('rewrites a job in format 2 when a script changes it, keeping every field and the payload byte for byte', async () => {
    const keys = await store('v1.rewrite', 'failed', V1.failedOnce, 'due');
    const consumer = t.queue.consume(
      'v1.rewrite',
      () => {
        throw new Error('always');
      },
      { maxAttempts: 10 },
    );
    try {
      await waitFor(async () => (await t.queue.get('v1.rewrite', 'failed'))!.attempts >= 2, 10_000, 'a failed delivery');
    } finally {
      await consumer.close();
    }
    const body = (await redis.hget(keys.jobs, 'failed'))!;
    expect(body.startsWith('2')).toBe(true);
    expect(body.endsWith('\x1e[1,"two",{"three":3}]')).toBe(true);
    expect(splitBody(body)!.fields).toMatchObject({
      createdAt: '1700000000001',
      maxAttempts: '3',
      backoff: '[10,2,3600000,0]',
      traceparent: TRACEPARENT,
    });
  });

  it('runs a job of a group and frees the group for its next job', async () => {
    const keys = new RedisKeySpace(t.keyPrefix).topic('v1.group');
    const score = Date.now() * DUE_SCORE_SLOTS;
    await redis.hset(keys.jobs, 'g1', V1.grouped);
    await redis.zadd(`${keys.jobs.slice(0, -':jobs'.length)}:group:order:42`, score, 'g1');
    await redis.zadd(keys.groupsReady, score, 'order:42');
    const runs: unknown[] = [];
    const consumer = t.queue.consume('v1.group', (payload) => void runs.push(payload));
    try {
      await waitFor(() => runs.length === 1, 10_000, 'the grouped job');
      await t.queue.schedule('v1.group', 'g2', { group: 'order:42' });
      await waitFor(() => runs.length === 2, 10_000, 'the next job of the group');
    } finally {
      await consumer.close();
    }
    expect(runs).toEqual(['g1', 'g2']);
    expect(await redis.hlen(keys.groupsOut)).toBe(0);
  });

  it('retries a dead letter, and buries a job whose last attempt lost its visibility', async () => {
    await store('v1.dead', 'dead', V1.dead, 'dead', Date.now());
    await store('v1.dead', 'expiring', V1.expiring, 'active', Date.now() - 1);
    expect(await t.queue.retryDead('v1.dead', 'dead')).toBe(1);
    const runs: string[] = [];
    const consumer = t.queue.consume('v1.dead', (_payload, job) => void runs.push(`${job.id}@${job.attempt}`));
    try {
      await waitFor(async () => runs.length === 1 && (await t.queue.get('v1.dead', 'expiring'))?.state === 'dead', 10_000, 'both');
    } finally {
      await consumer.close();
    }
    expect(runs).toEqual(['dead@1']);
    expect(await t.queue.get('v1.dead', 'expiring')).toMatchObject({
      state: 'dead',
      attempts: 2,
      lastError: expect.stringContaining('Visibility timeout passed') as unknown,
      payload: 5,
    });
  });
});
