import { Injectable } from '@nestjs/common';
import { InvalidOptionsError, LockContext, LockService, RedisLockEvents } from '../../lib/index.js';
import { LockServiceUnavailableError } from '../../lib/core/errors/lock-service-unavailable.error.js';
import type { LockContextSnapshot } from '../../lib/lock/lock-context.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { OnOneInstance } from '../../lib/decorators/on-one-instance.decorator.js';
import { OneInstanceLeases } from '../../lib/scheduling/one-instance-leases.js';
import type { OneInstanceAcquiredEvent, OneInstanceLostEvent, OneInstanceSkippedEvent } from '../../lib/core/events/scheduling-events.js';
import { deferred, waitFor, type Deferred } from '../support/timing.js';
import { useSchedulingInstances } from './support/scheduling-app.js';

@Injectable()
class Reports {
  readonly runs: Array<{ arg: number; context: LockContextSnapshot | undefined }> = [];
  gate?: Deferred<void>;

  @OnOneInstance({ ttl: 5_000 })
  async daily(arg: number): Promise<string> {
    this.runs.push({ arg, context: LockContext.current() });
    await this.gate?.promise;
    return `ran ${arg}`;
  }

  @OnOneInstance({ key: 'reports.failing', ttl: 5_000 })
  async failing(error: unknown): Promise<never> {
    throw error;
  }
}

describe('@OnOneInstance', () => {
  const instances = useSchedulingInstances('one');
  const { apps, redis } = instances;

  beforeEach(() => instances.start([Reports], 2));

  const reports = (i: number) => apps[i].get(Reports);

  it('runs the calls on the instance that took the lease; the others resolve undefined without running', async () => {
    expect(await reports(0).daily(1)).toBe('ran 1');
    expect(await reports(1).daily(1)).toBeUndefined();
    expect(await reports(1).daily(2)).toBeUndefined();
    expect(await reports(0).daily(2)).toBe('ran 2');
    expect(reports(0).runs.map((r) => r.arg)).toEqual([1, 2]);
    expect(reports(1).runs).toEqual([]);
    // The default key is Class.method; the lease stays held between calls.
    expect(await apps[1].get(LockService).isLocked('Reports.daily')).toBe(true);
    expect(apps[0].get(OneInstanceLeases).holds('Reports.daily')).toBe(true);
    expect(apps[1].get(OneInstanceLeases).owned()).toEqual([]);
  });

  it('gives the run its own lock: LockContext has the run lock, its fencing token and signal', async () => {
    await reports(0).daily(1);
    await reports(0).daily(2);
    const [first, second] = reports(0).runs.map((r) => r.context!);
    expect(first.key).toBe('Reports.daily:run');
    expect(first.signal).toBeInstanceOf(AbortSignal);
    expect(first.signal.aborted).toBe(false);
    expect(BigInt(second.fencingToken)).toBeGreaterThan(BigInt(first.fencingToken));
    // The run lock is released when the run ends; the lease is not.
    expect(await apps[0].get(LockService).isLocked('Reports.daily:run')).toBe(false);
  });

  it('passes the method’s errors through untouched', async () => {
    const error = new Error('boom');
    await expect(reports(0).failing(error)).rejects.toBe(error);
    expect(await reports(1).failing(error)).toBeUndefined();
  });

  it('hands the lease back on shutdown: the next instance runs at its next call once the handover guard has passed', async () => {
    await reports(0).daily(1);
    await apps[0].close();
    // The lease lapses at the guard's end (1 s after the last call: no gap between calls seen yet);
    // a call before then counts as the same tick. Shutdown did not wait for it.
    const owners = new RedisKeySpace(instances.keyPrefix).lock('Reports.daily').owners;
    expect(await redis.pttl(owners)).toBeGreaterThan(0);
    await waitFor(async () => (await redis.exists(owners)) === 0 || undefined, 5_000, "the lease to lapse at the guard's end");
    expect(await reports(1).daily(2)).toBe('ran 2');
    expect(apps[1].get(OneInstanceLeases).holds('Reports.daily')).toBe(true);
  });

  it('never overlaps two runs: a new lease holder skips calls while the previous holder’s run goes on', async () => {
    const gate = deferred();
    reports(0).gate = gate;
    const longRun = reports(0).daily(1);
    await waitFor(() => reports(0).runs.length === 1, 10_000, 'the first run to start');
    // The lease lapses while the run goes on (as after a long pause): the other instance takes it...
    await redis.del(new RedisKeySpace(instances.keyPrefix).lock('Reports.daily').owners);
    expect(await reports(1).daily(2)).toBeUndefined();
    expect(apps[1].get(OneInstanceLeases).holds('Reports.daily')).toBe(true);
    // ...but does not run while the first run still holds the run lock.
    expect(reports(1).runs).toEqual([]);
    gate.resolve();
    expect(await longRun).toBe('ran 1');
    expect(await reports(1).daily(3)).toBe('ran 3');
    // The first instance noticed that it lost the lease at its next call.
    expect(await reports(0).daily(4)).toBeUndefined();
    expect(apps[0].get(OneInstanceLeases).holds('Reports.daily')).toBe(false);
  });

  it('emits one-instance.acquired and one-instance.lost (handed back) on RedisLockEvents', async () => {
    const seen: Array<[string, OneInstanceAcquiredEvent | OneInstanceLostEvent]> = [];
    const events = apps[0].get(RedisLockEvents) as unknown as NodeJS.EventEmitter;
    events.on('one-instance.acquired', (e: OneInstanceAcquiredEvent) => seen.push(['acquired', e]));
    events.on('one-instance.lost', (e: OneInstanceLostEvent) => seen.push(['lost', e]));
    await reports(0).daily(1);
    await apps[0].close();
    expect(seen).toEqual([
      ['acquired', { key: 'Reports.daily', fencingToken: expect.any(String) }],
      ['lost', { key: 'Reports.daily', fencingToken: seen[0][1].fencingToken, reason: 'handed-back', heldMs: expect.any(Number) }],
    ]);
  });

  it('emits one-instance.skipped for each skipped call: not-owner on the other instances, still-running while a run goes on', async () => {
    const skipped: Array<[number, OneInstanceSkippedEvent]> = [];
    for (const i of [0, 1]) {
      const events = apps[i].get(RedisLockEvents) as unknown as NodeJS.EventEmitter;
      events.on('one-instance.skipped', (e: OneInstanceSkippedEvent) => skipped.push([i, e]));
    }
    const gate = deferred();
    reports(0).gate = gate;
    const longRun = reports(0).daily(1);
    await waitFor(() => reports(0).runs.length === 1, 10_000, 'the first run to start');
    expect(skipped).toEqual([]);
    // The holder's timer fires again while its run goes on; the other instance's timer fires too.
    expect(await reports(0).daily(2)).toBeUndefined();
    expect(await reports(1).daily(2)).toBeUndefined();
    gate.resolve();
    expect(await longRun).toBe('ran 1');
    // A call that runs emits nothing; the one on the other instance is skipped again.
    expect(await reports(0).daily(3)).toBe('ran 3');
    expect(await reports(1).daily(3)).toBeUndefined();
    expect(skipped).toEqual([
      [0, { key: 'Reports.daily', method: 'Reports.daily', reason: 'still-running' }],
      [1, { key: 'Reports.daily', method: 'Reports.daily', reason: 'not-owner' }],
      [1, { key: 'Reports.daily', method: 'Reports.daily', reason: 'not-owner' }],
    ]);
    // The event names the method, and the key it shares (here: its own key, set explicitly).
    await reports(0)
      .failing(new Error('runs here'))
      .catch(() => undefined);
    expect(await reports(1).failing(new Error('skipped'))).toBeUndefined();
    expect(skipped.at(-1)).toEqual([1, { key: 'reports.failing', method: 'Reports.failing', reason: 'not-owner' }]);
  });

  it('fails on an instance Nest did not create', async () => {
    await expect(new Reports().daily(1)).rejects.toBeInstanceOf(LockServiceUnavailableError);
  });

  it('checks its key and options when the class is defined', () => {
    const define = (options: object) => {
      class Jobs {
        @OnOneInstance(options as never)
        async run(): Promise<void> {}
      }
      return Jobs;
    };
    expect(() => define({ key: '' })).toThrow(InvalidOptionsError);
    expect(() => define({ key: '' })).toThrow(/key.*must not be empty.*@OnOneInstance on Jobs\.run\(\)/);
    expect(() => define({ key: 'x'.repeat(1021) })).toThrow(/at most 1024 characters/);
    expect(() => define({ ttl: 50 })).toThrow(/`ttl`: got 50; use a number of milliseconds from 100/);
    expect(() => define({ leaseTime: 1_000 })).toThrow(/`leaseTime`: unknown option, which would be ignored; the options are: key, ttl/);
    expect(() => define({ TTL: 1_000 })).toThrow(
      /`TTL`: unknown option \(did you mean `ttl`\?\), which would be ignored; the options are: key, ttl/,
    );
    expect(() => define({ key: 'ok', ttl: 1_000 })).not.toThrow();
    expect(() => {
      class Static {
        @OnOneInstance()
        static run(): void {}
      }
      return Static;
    }).toThrow(/is static/);
  });
});
