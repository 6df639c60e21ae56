/**
 * The micro-benchmarks behind docs/benchmarks.md "The common case fast": 64 callers on one
 * connection, each looping take + give back on a key of its own, on a private Redis.
 *
 *   node --import ./tools/typescript-loader/register.js bench/profile/protocol-variants.bench.ts [transport|scripts]
 *
 * `transport`: SET NX PX + compare-and-delete over one write per command (ioredis' default), ioredis'
 * `enableAutoPipelining`, and writes coalesced per event-loop turn (the module's own connections):
 * cycles/s, client CPU and Redis CPU (INFO cpu) per cycle.
 * `scripts`: lock protocols as Lua, on coalesced writes: today's owner hash + fence key, the same
 * without the fence, the fence kept in the owner hash, and the first hold as a plain string; script
 * execution time per cycle (EVAL usec in INFO commandstats, the commands it ran included).
 * Medians of 5 rounds (the scripts' order rotated each round).
 */
import { Redis } from 'ioredis';
import { coalesceWritesPerTick } from '../../lib/core/redis/coalesce-writes.js';
import { provideBenchRedis } from '../support/bench-redis.js';

const WIDTH = 64;
const ROUNDS = 5;
const ROUND_MS = 600;
const RETENTION_MS = 3_600_000;

/** A script pair: KEYS[1] lock, KEYS[2] fence (acquire); ARGV owner, lease, hold. */
const OWNER_HASH = `if redis.call('exists', KEYS[1]) == 1 then return {0, redis.call('pttl', KEYS[1])} end
redis.call('hset', KEYS[1], ARGV[1], 1, ARGV[3], 1)
redis.call('pexpire', KEYS[1], ARGV[2])
`;
const FENCE_KEY = `local clock = redis.call('time')
local floor = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local text = string.format('%.0f', floor)
local stored = tonumber(redis.call('set', KEYS[2], text, 'px', ${RETENTION_MS}, 'get') or '')
if stored and stored >= floor then text = string.format('%.0f', stored + 1); redis.call('set', KEYS[2], text, 'px', ${RETENTION_MS}) end
return {1, text}`;
const END_HASH_HOLD = `local f = redis.call('hmget', KEYS[1], ARGV[3], ARGV[1], '/w')
if not f[1] then return -1 end
redis.call('del', KEYS[1]) return 0`;
const END_STRING_HOLD = `if redis.call('get', KEYS[1]) == ARGV[3] then return redis.call('del', KEYS[1]) end return 0`;

const SCRIPTS: Record<string, { acquire: string; release: string }> = {
  'owner hash + fence key (today)': { acquire: OWNER_HASH + FENCE_KEY, release: END_HASH_HOLD },
  'owner hash, no fence': { acquire: `${OWNER_HASH}return {1, 0}`, release: END_HASH_HOLD },
  'fence in the owner hash': {
    acquire: `local f = redis.call('hmget', KEYS[1], 'o', 'f')
if f[1] then return {0, redis.call('pttl', KEYS[1])} end
local clock = redis.call('time')
local text = string.format('%.0f', math.max((tonumber(f[2]) or 0) + 1, tonumber(clock[1]) * 1000000 + tonumber(clock[2])))
redis.call('hset', KEYS[1], 'o', ARGV[1], 'h', ARGV[3], 'f', text)
redis.call('pexpire', KEYS[1], ARGV[2])
return {1, text}`,
    release: `local f = redis.call('hmget', KEYS[1], 'h', '/w')
if f[1] ~= ARGV[3] then return -1 end
redis.call('hdel', KEYS[1], 'o', 'h')
redis.call('pexpire', KEYS[1], ${RETENTION_MS}) return 0`,
  },
  'first hold as a string + fence key': {
    acquire: `if not redis.call('set', KEYS[1], ARGV[3], 'nx', 'px', ARGV[2]) then return {0, redis.call('pttl', KEYS[1])} end
${FENCE_KEY}`,
    release: END_STRING_HOLD,
  },
};

type Cycle = (key: string, hold: string) => Promise<void>;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];

async function redisCpuMicros(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const field = (name: string) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)![1]);
  return (field('used_cpu_sys') + field('used_cpu_user')) * 1e6;
}

async function scriptMicros(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  return Number(/cmdstat_eval:calls=\d+,usec=(\d+)/.exec(info)?.[1] ?? 0);
}

/** Runs `cycle` from WIDTH callers for `ms`; resolves the cycles done. */
async function drive(cycle: Cycle, tag: string, ms: number): Promise<number> {
  let sequence = 0;
  const until = performance.now() + ms;
  const counts = await Promise.all(
    Array.from({ length: WIDTH }, async (_, i) => {
      let n = 0;
      while (performance.now() < until) {
        await cycle(`{${tag}:${i}}`, `abcdef012345:${++sequence}/${sequence}`);
        n++;
      }
      return n;
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

async function transport(url: string, admin: Redis): Promise<void> {
  const variants: Record<string, () => Redis> = {
    'one write per command (ioredis default)': () => new Redis(url),
    enableAutoPipelining: () => new Redis(url, { enableAutoPipelining: true }),
    'writes coalesced per turn (ours)': () => {
      const client = new Redis(url);
      coalesceWritesPerTick(client);
      return client;
    },
  };
  for (const [name, create] of Object.entries(variants)) {
    const client = create();
    const release = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;
    const cycle: Cycle = async (key, hold) => {
      if ((await client.set(key, hold, 'PX', 10_000, 'NX')) !== 'OK') throw new Error(`${key} is held`);
      await client.eval(release, 1, key, hold);
    };
    await drive(cycle, 'warm', 200);
    const rounds: Array<[number, number, number]> = [];
    for (let r = 0; r < ROUNDS; r++) {
      const redis0 = await redisCpuMicros(admin);
      const client0 = process.cpuUsage();
      const started = performance.now();
      const n = await drive(cycle, name, ROUND_MS);
      const elapsed = performance.now() - started;
      const used = process.cpuUsage(client0);
      rounds.push([(n / elapsed) * 1000, (used.user + used.system) / n, ((await redisCpuMicros(admin)) - redis0) / n]);
    }
    client.disconnect();
    const at = (i: number) => median(rounds.map((x) => x[i]));
    console.log(
      `${name.padEnd(42)} ${Math.round(at(0)).toLocaleString('en-US').padStart(8)} cycles/s  ` +
        `client ${at(1).toFixed(1)} µs  Redis ${at(2).toFixed(1)} µs per cycle`,
    );
  }
}

async function scripts(url: string, admin: Redis): Promise<void> {
  const client = new Redis(url);
  coalesceWritesPerTick(client);
  const names = Object.keys(SCRIPTS);
  const cycleOf = (name: string): Cycle => {
    const { acquire, release } = SCRIPTS[name];
    return async (key, hold) => {
      const owner = hold.slice(0, hold.indexOf('/'));
      const [ok] = (await client.eval(acquire, 2, key, `${key}:fence`, owner, 10_000, hold)) as [number];
      if (ok !== 1) throw new Error(`${key} is held`);
      await client.eval(release, 1, key, owner, 'publish', hold);
    };
  };
  for (const name of names) await drive(cycleOf(name), `warm-${name}`, 200);
  const rounds = new Map<string, number[]>(names.map((name) => [name, []]));
  // The order rotates every round, so no variant always runs first or last.
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + r) % names.length];
      await admin.config('RESETSTAT');
      const n = await drive(cycleOf(name), name, ROUND_MS);
      rounds.get(name)!.push((await scriptMicros(admin)) / n);
    }
  }
  for (const [name, values] of rounds) {
    console.log(
      `${name.padEnd(36)} ${median(values).toFixed(2)} µs of script execution per cycle (rounds ` +
        `${values.map((x) => x.toFixed(1)).join(' ')})`,
    );
  }
  client.disconnect();
}

async function main(): Promise<void> {
  const which = process.argv[2] ?? 'transport';
  const redis = await provideBenchRedis();
  const admin = new Redis(redis.url);
  try {
    await (which === 'scripts' ? scripts(redis.url, admin) : transport(redis.url, admin));
  } finally {
    admin.disconnect();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
