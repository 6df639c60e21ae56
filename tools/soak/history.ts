/**
 * The history the model-based checker (tools/soak/history-checker.ts) reads: one event per store
 * operation of the soak workers, in the order the store ran them.
 *
 * Every event goes through the soak's fenced store (tools/soak/soak-store.ts), one Lua script on a
 * connection the fault proxies never touch, which stamps it with
 * - `seq`: a store-wide counter, so the events of all workers are totally ordered (a Lua script runs
 *   alone: if an event got a smaller `seq`, the store ran it before the other one);
 * - `us`: the Redis server clock (TIME, µs), the clock the library schedules jobs by;
 * - `ok`: for fenced and semaphore operations, whether the store accepted it.
 * A store operation is logged once even when a lost reply makes the client send it twice.
 */

/** Lock kinds the workers exercise; `multi` is a multi-key lock (one event per key it covers). */
export type LockKind = 'plain' | 'reentrant' | 'fair' | 'extend' | 'multi' | 'read' | 'write' | 'semaphore';

export const LOCK_KINDS: readonly LockKind[] = ['plain', 'reentrant', 'fair', 'extend', 'multi', 'read', 'write', 'semaphore'];

export type HistoryOp =
  /** Before the library's acquire call (`keys`: every key it asks for). */
  | 'acquire-invoke'
  /** The acquire call rejected or returned no hold (`error`: its code). */
  | 'acquire-failed'
  /** Fenced: the hold announces itself to a key's row with its token; `value` = the row's value. */
  | 'enter'
  /** Fenced: read-modify-write of the row's counter; `value` = the value written. */
  | 'write'
  /** Fenced: the hold's last store operation on the key. */
  | 'leave'
  /** After a refused fenced operation: whether the library still said the lock was held (`held`). */
  | 'held-check'
  /** `extend()` of the hold resolved (`ok: true`) or threw (`ok: false`, `error`). */
  | 'extend'
  /** The library's release call resolved (`keys`, `token`). */
  | 'release'
  /** The library's release call (or `using()` around a section) rejected (`error`). */
  | 'release-failed'
  /** Semaphore: the permit holder counts itself in; accepted only if its permit certainly lasts past now. */
  | 'sem-enter'
  /** Semaphore: the permit holder counts itself out (before releasing the permit). */
  | 'sem-leave'
  /** Before `schedule()`: `job`, and `delayMs` or `atMs`. */
  | 'schedule-invoke'
  /** `schedule()` resolved: the job must run at least once. */
  | 'scheduled'
  /** `schedule()` rejected: the job may or may not run. */
  | 'schedule-failed'
  /** A handler run of `job` began (`attempt`). */
  | 'run'
  /** The fault driver (`w: 'driver'`) begins or ends a fault (`fault`: what, on which worker slot). */
  | 'fault';

export interface HistoryEvent {
  readonly seq: number;
  /** Redis server clock, µs since the epoch. */
  readonly us: number;
  /** The worker process incarnation (`w<slot>.<incarnation>`). */
  readonly w: string;
  readonly op: HistoryOp;
  /** Accepted by the store (fenced and semaphore operations); other operations are always `true`. */
  readonly ok: boolean;
  /** One acquire call's hold: unique per call, shared by all its events. */
  readonly hold?: string;
  readonly kind?: LockKind;
  /** The one key of a fenced or semaphore operation. */
  readonly key?: string;
  readonly keys?: readonly string[];
  /** Fencing token (decimal string) of `key` for this hold; compared as BigInt. */
  readonly token?: string;
  readonly value?: number;
  /** A refused fenced operation: the highest token the row had seen. */
  readonly seen?: string;
  readonly held?: boolean;
  /** `sem-enter`: epoch ms before which the permit certainly does not end (time sent + fixed lease). */
  readonly endsAtMs?: number;
  readonly job?: string;
  readonly delayMs?: number;
  readonly atMs?: number;
  readonly attempt?: number;
  readonly error?: string;
  readonly fault?: string;
}

/** The store's log line: `<status> <seq> <us> <value> <event json>` (see soak-store.ts). */
export function parseLogLine(line: string): HistoryEvent {
  const match = /^(-?1) (\d+) (\d+) (\S*) (.*)$/.exec(line);
  if (!match) throw new Error(`not a history line: ${line.slice(0, 200)}`);
  const [, status, seq, us, value, json] = match;
  const event = JSON.parse(json) as Omit<HistoryEvent, 'seq' | 'us' | 'ok'>;
  const stamped: Record<string, unknown> = { ...event, seq: Number(seq), us: Number(us), ok: status === '1' };
  if (value !== '' && value !== '-') {
    if (event.op === 'enter' && status === '1') stamped.value = Number(value);
    else if (status !== '1') stamped.seen = value;
  }
  return stamped as unknown as HistoryEvent;
}
