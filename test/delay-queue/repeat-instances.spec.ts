import { Redis } from 'ioredis';
import { startFixtureInstances, stopInstances, type FixtureInstance } from '../support/fixture-instances.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';

/*
 * Repeatable jobs across real processes: three instances call repeat() for the same schedule and
 * consume its topic (test/fixtures/repeat-instance.ts). Ticks are counted per tick, never timed.
 */

const EVERY = 300;
const TOPIC = 'repeat.beat';

type Instance = FixtureInstance;

/** Starts `count` test/fixtures/repeat-instance.ts processes repeating TOPIC every EVERY ms. */
function startInstances(keyPrefix: string, count: number, options: { visibilityTimeout: number; shards?: number }): Promise<Instance[]> {
  return startFixtureInstances('repeat-instance.ts', count, (name) => [
    testRedisUrl(),
    keyPrefix,
    name,
    TOPIC,
    String(EVERY),
    'latest',
    String(options.visibilityTimeout),
    String(options.shards ?? 1),
  ]);
}

/** Successful runs per tick, in tick order. */
async function doneByTick(redis: Redis, keyPrefix: string): Promise<Array<[number, number]>> {
  const done = await redis.hgetall(`${keyPrefix}:done`);
  return Object.entries(done)
    .map(([tick, runs]) => [Number(tick), Number(runs)] as [number, number])
    .sort((a, b) => a[0] - b[0]);
}

/** Every tick from the first done to the last done, each with its successful runs (0 for a gap). */
function window(done: ReadonlyArray<[number, number]>): Array<[number, number]> {
  const runs = new Map(done);
  const ticks: Array<[number, number]> = [];
  for (let tick = done[0][0]; tick <= done[done.length - 1][0]; tick += EVERY) ticks.push([tick, runs.get(tick) ?? 0]);
  return ticks;
}

describe('repeat() across three processes', () => {
  let redis: Redis;
  let instances: Instance[] = [];

  beforeAll(() => {
    redis = new Redis(testRedisUrl());
  });
  afterEach(async () => {
    await stopInstances(instances, 'SIGKILL');
    instances = [];
  });
  afterAll(() => redis.quit());

  it.each([
    ['a plain topic', 1],
    ['a sharded topic (4 shards)', 4],
  ])(
    'enqueues and runs every tick exactly once on %s',
    async (_label, shards) => {
      const keyPrefix = uniquePrefix('rep');
      instances = await startInstances(keyPrefix, 3, { visibilityTimeout: 10_000, shards });
      await waitFor(async () => (await doneByTick(redis, keyPrefix)).length >= 15, 60_000, '15 ticks');
      await stopInstances(instances, 'SIGTERM');
      const done = await doneByTick(redis, keyPrefix);
      expect(window(done).filter(([, runs]) => runs !== 1)).toEqual([]);
      const started = await redis.lrange(`${keyPrefix}:started`, 0, -1);
      // One delivery per tick (no redelivery without a crash), spread over the instances.
      expect(started).toHaveLength(done.length);
      expect(new Set(started.map((line) => line.split(':')[0])).size).toBe(done.length);
    },
    120_000,
  );

  it('redelivers the tick of a SIGKILLed handler: one successful run per tick, and the ticks after it go on', async () => {
    const keyPrefix = uniquePrefix('rep');
    instances = await startInstances(keyPrefix, 3, { visibilityTimeout: 1_500 });
    await waitFor(async () => (await doneByTick(redis, keyPrefix)).length >= 3, 60_000, 'three ticks');
    await redis.set(`${keyPrefix}:hang-next`, '1');
    await waitFor(async () => (await redis.exists(`${keyPrefix}:hung`)) === 1, 30_000, 'a handler to hang');
    const [hungTick, hungName] = (await redis.get(`${keyPrefix}:hung`))!.split(':');
    const victim = instances.find((instance) => instance.name === hungName)!;
    victim.child.kill('SIGKILL');
    await victim.exited;
    await waitFor(
      async () => {
        const done = await doneByTick(redis, keyPrefix);
        return done.some(([tick]) => tick === Number(hungTick)) && done.filter(([tick]) => tick > Number(hungTick)).length >= 6;
      },
      60_000,
      'the hung tick to be redelivered and six more ticks',
    );
    await stopInstances(instances, 'SIGTERM');
    const done = await doneByTick(redis, keyPrefix);
    expect(window(done).filter(([, runs]) => runs !== 1)).toEqual([]);
    const started = await redis.lrange(`${keyPrefix}:started`, 0, -1);
    const hungDeliveries = started.filter((line) => line.startsWith(`${hungTick}:`));
    expect(hungDeliveries[0]).toBe(`${hungTick}:${hungName}:1`);
    expect(hungDeliveries.length).toBeGreaterThanOrEqual(2);
    expect(hungDeliveries.slice(1).every((line) => !line.includes(`:${hungName}:`))).toBe(true);
  }, 120_000);
});
