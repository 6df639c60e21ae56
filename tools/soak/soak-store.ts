import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { HistoryEvent } from './history.js';

/**
 * The soak's fenced store and history log, kept in Redis beside (not inside) the library's keys and
 * written over a direct connection that the fault proxies never touch, as a separate database would be.
 *
 * - a **fenced row** per lock key (`value`, `seen` = highest fencing token seen, `writes`): an
 *   operation carrying a token lower than one the row has seen is refused (`UPDATE … WHERE fence <= :token`);
 * - **semaphore entries**, accepted only while the permit certainly lasts (time sent + fixed lease > now);
 * - every operation of every worker appended to one **log** (the history), stamped in one Lua script
 *   with a store-wide sequence number and the Redis clock, with the store's verdict.
 *
 * Every operation carries an id: run twice (ioredis re-sends a command whose reply a restart or a
 * reset lost), it answers the first run's reply and is logged once.
 */
export interface SoakKeys {
  row(lock: string): string;
  readonly seq: string;
  readonly log: string;
  op(id: string): string;
}

export function soakKeys(prefix: string): SoakKeys {
  return {
    row: (lock) => `${prefix}:store:${lock}`,
    seq: `${prefix}:history:seq`,
    log: `${prefix}:history:log`,
    op: (id) => `${prefix}:history:op:${id}`,
  };
}

/**
 * KEYS[1] seq counter, KEYS[2] log list, KEYS[3] this operation's reply (kept 2 min, long past any re-send), KEYS[4] fenced row.
 * ARGV[1] mode: record | enter | write | leave | sem-enter; ARGV[2] event JSON; ARGV[3] token;
 * ARGV[4] value to write (write) or epoch ms the permit lasts until (sem-enter).
 * Returns and logs `<status> <seq> <us> <value>`: status 1 accepted, -1 refused; value = the row's
 * value (enter) or the token the row had seen (a refusal), `-` otherwise.
 */
const STORE_OPERATION = `
local done = redis.call('get', KEYS[3])
if done then return done end
local t = redis.call('time')
local us = t[1] .. string.format('%06d', tonumber(t[2]))
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local mode = ARGV[1]
local status, value = 1, '-'
local function newer(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
if mode == 'enter' or mode == 'write' or mode == 'leave' then
  local token = ARGV[3]
  local seen = redis.call('hget', KEYS[4], 'seen') or '0'
  if newer(seen, token) then
    status, value = -1, seen
  else
    if newer(token, seen) then redis.call('hset', KEYS[4], 'seen', token) end
    if mode == 'enter' then
      value = redis.call('hget', KEYS[4], 'value') or '0'
    elseif mode == 'write' then
      redis.call('hset', KEYS[4], 'value', ARGV[4])
      redis.call('hincrby', KEYS[4], 'writes', 1)
    end
  end
elseif mode == 'sem-enter' then
  if tonumber(ARGV[4]) <= nowMs then status = -1 end
end
local seq = redis.call('incr', KEYS[1])
local reply = status .. ' ' .. seq .. ' ' .. us .. ' ' .. value
redis.call('rpush', KEYS[2], reply .. ' ' .. ARGV[2])
redis.call('set', KEYS[3], reply, 'PX', 120000)
return reply
`;

export type StoreEvent = Omit<HistoryEvent, 'seq' | 'us' | 'ok' | 'seen'>;

export interface StoreReply {
  readonly ok: boolean;
  readonly seq: number;
  readonly us: number;
  /** enter: the row's value; a refusal: the token the row had seen. */
  readonly value?: string;
}

/** The soak's store for one worker: every call is one logged, idempotent operation. */
export class SoakStore {
  private readonly opPrefix = randomBytes(6).toString('hex');
  private opSequence = 0;

  constructor(
    private readonly redis: Redis,
    private readonly keys: SoakKeys,
  ) {}

  /** Logs an event the store has no verdict on (acquire began, release returned, a job ran, ...). */
  record(event: StoreEvent): Promise<StoreReply> {
    return this.run('record', event, '', '');
  }

  /** A fenced operation on `event.key`'s row with `event.token`. */
  fenced(event: StoreEvent & { op: 'enter' | 'write' | 'leave'; key: string; token: string }): Promise<StoreReply> {
    return this.run(event.op, event, event.token, event.op === 'write' ? String(event.value) : '');
  }

  /** A semaphore holder counts itself in: refused if its permit may already have ended. */
  semaphoreEnter(event: StoreEvent & { op: 'sem-enter'; endsAtMs: number }): Promise<StoreReply> {
    return this.run('sem-enter', event, '', String(event.endsAtMs));
  }

  private async run(mode: string, event: StoreEvent, token: string, arg: string): Promise<StoreReply> {
    const id = `${this.opPrefix}.${this.opSequence++}`;
    const row = event.key !== undefined ? this.keys.row(event.key) : this.keys.row('-');
    const reply = (await this.redis.eval(
      STORE_OPERATION,
      4,
      this.keys.seq,
      this.keys.log,
      this.keys.op(id),
      row,
      mode,
      JSON.stringify(event),
      token,
      arg,
    )) as string;
    const [status, seq, us, value] = reply.split(' ');
    return { ok: status === '1', seq: Number(seq), us: Number(us), value: value === '-' ? undefined : value };
  }
}

/** A fenced row as the orchestrator checks it at the end. */
export async function readRow(store: Redis, row: string): Promise<{ value: number; writes: number; seen: string }> {
  const [value, writes, seen] = await store.hmget(row, 'value', 'writes', 'seen');
  return { value: Number(value ?? 0), writes: Number(writes ?? 0), seen: seen ?? '0' };
}
