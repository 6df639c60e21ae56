import type { Provider, Type } from '@nestjs/common';
import { Redis } from 'ioredis';
import { Test, type TestingModule } from '@nestjs/testing';
import { RedisLockModule, type LockHandle, type LockService, type RedisLockModuleOptions } from '../../../lib/index.js';
import { sleep, waitFor, type WaitOptions } from '../../support/timing.js';

/** A Nest testing module with RedisLockModule (logger off: failovers make the client log a lot). */
export async function createFailoverApp(
  options: RedisLockModuleOptions,
  providers: Array<Provider | Type<unknown>> = [],
): Promise<TestingModule> {
  const app = await Test.createTestingModule({ imports: [RedisLockModule.forRoot(options)], providers }).compile();
  app.useLogger(false);
  await app.init();
  return app;
}

/** Wait options for checks made while Redis fails over: a check that throws is asked again. */
export const THROUGH_FAILOVER: WaitOptions = { every: 20, retryErrors: true };

/**
 * `tryAcquire` repeated until Redis answers (errors while the client reconnects after a failover are
 * retried); resolves with the handle or null, and when Redis first answered.
 */
export async function tryAcquireOnceReachable(locks: LockService, key: string, timeoutMs = 20_000): Promise<LockHandle | null> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      return await locks.tryAcquire(key);
    } catch (error) {
      if (performance.now() > deadline) throw error;
      await sleep(50);
    }
  }
}

/**
 * Detects double grants the way the outside world would see them: every critical section enters
 * and leaves here. Two holders of one key inside at once is an overlap; a fencing token not larger
 * than the last accepted one for the key is a write a fenced store would reject.
 */
export class GrantLedger {
  private readonly inside = new Map<string, number>();
  private readonly lastToken = new Map<string, bigint>();
  overlaps = 0;
  fencedRejections = 0;
  grants = 0;

  enter(key: string, fencingToken: string): void {
    this.grants++;
    const n = this.inside.get(key) ?? 0;
    if (n > 0) this.overlaps++;
    this.inside.set(key, n + 1);
    const token = BigInt(fencingToken);
    if (token <= (this.lastToken.get(key) ?? -1n)) this.fencedRejections++;
    else this.lastToken.set(key, token);
  }

  leave(key: string): void {
    this.inside.set(key, (this.inside.get(key) ?? 1) - 1);
  }
}

/** Loads still running (a failed test leaves them so): `stopAllLoads()` in `afterAll`. */
const runningLoads = new Set<LockLoad>();

export async function stopAllLoads(): Promise<void> {
  await Promise.all([...runningLoads].map((load) => load.stop()));
}

/** How one waiting acquire ended: when it got the lock, or the error code it failed with. */
export interface WaitOutcome {
  readonly handle?: LockHandle;
  readonly at: number;
  readonly code?: string;
}

/** Settles a waiting acquire into a `WaitOutcome` (never rejects). */
export function settleWait(pending: Promise<LockHandle>): Promise<WaitOutcome> {
  return pending.then(
    (handle) => ({ handle, at: performance.now() }),
    (error: unknown) => ({ at: performance.now(), code: (error as { code?: string }).code ?? (error as Error).name }),
  );
}

/**
 * What a failover did to two held locks: one whose lease outlasts the failover and one whose lease
 * is shorter, each with a waiter parked behind it. Times are from the kill.
 */
export function heldLockOutcomes(
  killedAt: number,
  long: { readonly holder: LockHandle; readonly waiter: WaitOutcome },
  short: { readonly holder: LockHandle; readonly waiter: WaitOutcome; readonly lostAt: number | undefined },
): Record<string, unknown> {
  const waited = (outcome: WaitOutcome) => outcome.code ?? `acquired after ${Math.round(outcome.at - killedAt)} ms`;
  return {
    longLeaseHolderAborted: long.holder.signal.aborted,
    longLeaseWaiter: waited(long.waiter),
    shortLeaseHolderAborted: short.holder.signal.aborted,
    shortLeaseAbortReason: (short.holder.signal.reason as { reason?: string } | undefined)?.reason ?? 'none',
    shortLeaseAbortedAfterKillMs: short.lostAt === undefined ? -1 : short.lostAt - killedAt,
    shortLeaseWaiter: waited(short.waiter),
  };
}

/**
 * Takes locks on `keys` in a loop from several services until stopped, each hold entering the
 * ledger for `holdMs`. Records when acquires succeed and fail so recovery after a fault can be read off.
 */
export class LockLoad {
  private running = true;
  private readonly loops: Array<Promise<void>> = [];
  /** Acquires that succeeded: when each was started and when it resolved (monotonic ms). */
  readonly successes: Array<{ startedAt: number; at: number }> = [];
  readonly failures: Array<{ at: number; code: string }> = [];

  constructor(
    private readonly services: LockService[],
    private readonly keys: string[],
    private readonly ledger: GrantLedger,
    private readonly holdMs = 3,
    private readonly acquireOptions: Parameters<LockService['acquire']>[1] = { waitTimeout: 5_000 },
  ) {}

  start(workersPerService = 2): this {
    runningLoads.add(this);
    let n = 0;
    for (const locks of this.services) {
      for (let w = 0; w < workersPerService; w++) this.loops.push(this.loop(locks, n++));
    }
    return this;
  }

  async stop(): Promise<void> {
    this.running = false;
    runningLoads.delete(this);
    await Promise.all(this.loops);
  }

  /**
   * When the first acquire *started* after `t` (monotonic ms) succeeded, or undefined. Replies
   * already on their way when Redis died do not count as recovery.
   */
  firstSuccessStartedAfter(t: number): number | undefined {
    return this.successes.find((s) => s.startedAt > t)?.at;
  }

  /** Waits up to 30 s for an acquire started after `t` (monotonic ms) to succeed; resolves with how long after `t` it did. */
  async recoveredAfter(t: number, what: string): Promise<number> {
    const at = await waitFor(() => this.firstSuccessStartedAfter(t), 30_000, what, THROUGH_FAILOVER);
    return at - t;
  }

  private async loop(locks: LockService, worker: number): Promise<void> {
    let i = worker;
    while (this.running) {
      const key = this.keys[i++ % this.keys.length];
      const startedAt = performance.now();
      try {
        const handle = await locks.acquire(key, this.acquireOptions);
        this.successes.push({ startedAt, at: performance.now() });
        this.ledger.enter(key, handle.fencingToken);
        await sleep(this.holdMs);
        this.ledger.leave(key);
        await handle.release().catch(() => undefined);
      } catch (error) {
        this.failures.push({ at: performance.now(), code: (error as { code?: string }).code ?? (error as Error).name });
        await sleep(20);
      }
    }
  }
}

/** Rounds every number of a measurement record for printing. */
export function rounded<T extends Record<string, unknown>>(record: T): T {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, typeof v === 'number' ? Math.round(v) : v])) as T;
}

/**
 * Freezes (SIGSTOP) a local redis-server found by its port (its pid from `INFO server`), for
 * topologies whose helper has no pause of its own. Returns the function that thaws it again.
 */
export async function freezeRedisOnPort(port: number): Promise<() => void> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  let pid: number;
  try {
    await client.connect();
    pid = Number(/process_id:(\d+)/.exec(await client.info('server'))?.[1]);
  } finally {
    client.disconnect();
  }
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no process id for the redis-server on port ${port}`);
  process.kill(pid, 'SIGSTOP');
  let thawed = false;
  const thaw = () => {
    if (thawed) return;
    thawed = true;
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // Already gone.
    }
  };
  // Never leave a frozen server behind, even if the test process exits early.
  process.once('exit', thaw);
  return () => {
    process.off('exit', thaw);
    thaw();
  };
}

/** One command on one node over a short-lived plain connection. */
export async function nodeCall(port: number, ...args: [string, ...(string | number)[]]): Promise<unknown> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(...args);
  } finally {
    client.disconnect();
  }
}
