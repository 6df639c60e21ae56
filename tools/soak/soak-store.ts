import type { Redis } from 'ioredis';

/**
 * The soak's own bookkeeping, kept in Redis beside (not inside) the library's keys and written over
 * a direct connection that the fault proxies never touch, as a separate database would be:
 *
 * - a **fenced row** per lock (`value`, `seen` = highest fencing token seen, `writes`), which refuses
 *   any read or write carrying a token lower than one it has already seen. A holder is refused only
 *   if someone with a newer token got in after it: fine once its lease is gone (a stale holder,
 *   stopped by the fence), a violation while the library still says it holds the lock;
 * - the **semaphore's occupants** with the moment each one's permit certainly ends, to count how many
 *   hold a permit at once;
 * - the **job ledger**: ids whose `schedule()` resolved, and one entry per handler run.
 *
 * Every script is safe to run twice (ioredis re-sends a command whose reply a reset connection
 * lost), so a fault never shows up as a false duplicate or a false counter mismatch.
 */
export interface SoakKeys {
  row(lock: string): string;
  readonly semaphoreOccupants: string;
  readonly scheduled: string;
  readonly handlings: string;
}

export function soakKeys(prefix: string): SoakKeys {
  return {
    row: (lock) => `${prefix}:store:${lock}`,
    semaphoreOccupants: `${prefix}:semaphore-occupants`,
    scheduled: `${prefix}:ledger:scheduled`,
    handlings: `${prefix}:ledger:handlings`,
  };
}

/** KEYS[1] row; ARGV[1] fencing token. Returns { 1, value } or { -1, highest token seen }. */
const FENCED_READ = `
local seen = tonumber(redis.call('hget', KEYS[1], 'seen') or '0')
local token = tonumber(ARGV[1])
if token < seen then return { -1, seen } end
if token > seen then redis.call('hset', KEYS[1], 'seen', ARGV[1]) end
return { 1, tonumber(redis.call('hget', KEYS[1], 'value') or '0') }
`;

/** KEYS[1] row; ARGV[1] token, ARGV[2] new value. Returns 1 written, 0 already written by this token, -1 refused. */
const FENCED_WRITE = `
local token = tonumber(ARGV[1])
if token < tonumber(redis.call('hget', KEYS[1], 'seen') or '0') then return -1 end
if redis.call('hget', KEYS[1], 'lastWriter') == ARGV[1] then return 0 end
redis.call('hset', KEYS[1], 'seen', ARGV[1], 'value', ARGV[2], 'lastWriter', ARGV[1])
redis.call('hincrby', KEYS[1], 'writes', 1)
return 1
`;

/**
 * KEYS[1] occupants zset (member -> epoch ms at which its permit certainly ends);
 * ARGV[1] member, ARGV[2] that end. Drops occupants whose end passed, then returns how many others
 * remain (-1 if this one's own end already passed: it must not count itself in).
 */
const SEMAPHORE_ENTER = `
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
if tonumber(ARGV[2]) <= now then return -1 end
local others = redis.call('zcard', KEYS[1])
if redis.call('zscore', KEYS[1], ARGV[1]) then others = others - 1 end
redis.call('zadd', KEYS[1], ARGV[2], ARGV[1])
return others
`;

export type FencedRead = { ok: true; value: number } | { ok: false; seen: number };

export async function fencedRead(store: Redis, row: string, token: string): Promise<FencedRead> {
  const [status, n] = (await store.eval(FENCED_READ, 1, row, token)) as [number, number];
  return status === 1 ? { ok: true, value: Number(n) } : { ok: false, seen: Number(n) };
}

export async function fencedWrite(store: Redis, row: string, token: string, value: number): Promise<-1 | 0 | 1> {
  return (await store.eval(FENCED_WRITE, 1, row, token, value)) as -1 | 0 | 1;
}

export async function enterSemaphore(store: Redis, keys: SoakKeys, member: string, permitEndsAt: number): Promise<number> {
  return (await store.eval(SEMAPHORE_ENTER, 1, keys.semaphoreOccupants, member, permitEndsAt)) as number;
}

export async function leaveSemaphore(store: Redis, keys: SoakKeys, member: string): Promise<void> {
  await store.zrem(keys.semaphoreOccupants, member);
}

/** A fenced row as the orchestrator checks it at the end. */
export async function readRow(store: Redis, row: string): Promise<{ value: number; writes: number; seen: number }> {
  const [value, writes, seen] = await store.hmget(row, 'value', 'writes', 'seen');
  return { value: Number(value ?? 0), writes: Number(writes ?? 0), seen: Number(seen ?? 0) };
}
