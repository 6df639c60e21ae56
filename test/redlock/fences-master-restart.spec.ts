import type { TestingModule } from '@nestjs/testing';
import { LockService, type LockHandle } from '../../lib/index.js';
import { errorMessage } from '../../lib/core/errors/error-message.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { holdsWithin, sleep } from '../support/timing.js';
import { UnhandledRejections } from '../support/unhandled-rejections.js';
import { FenceHistory, seededRandom, type GrantKind } from '../lock/fence-history.js';
import { createRedlockApp, mastersReconnected } from './redlock-test-app.js';
import { uniquePrefix } from '../support/test-app.js';

/**
 * Redlock mode on 3 masters without persistence: each master in turn is restarted (SIGKILL, its
 * counters gone) while clients take plain, re-entrant and multi-key locks on random keys; then two
 * masters at once (a majority lost its counters). Every token is recorded and checked as in
 * test/lock/fences-under-faults.spec.ts: a fresh grant is above every token of its key granted
 * before it was asked for. One master lost: the other two still hold counters at least as high as
 * every token (the quorum invariant, lib/lock/redlock/fencing-token.ts). Two lost: their counters
 * restart at the clock floor (whole seconds), above every token of an earlier second; the masters
 * stay down over a second, so the next grant is in a later one.
 */
describe('Redlock fencing tokens when masters restart without persistence', () => {
  const SEED = Number(process.env.FENCE_FAULTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const unhandled = new UnhandledRejections();
  let masters: LocalRedisServer[] = [];
  let apps: TestingModule[] = [];

  beforeAll(async () => {
    unhandled.start();
    masters = await Promise.all([0, 1, 2].map(() => startLocalRedisServer()));
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close().catch(() => undefined)));
    await Promise.all(masters.map((m) => m.stop()));
    unhandled.stop();
  });

  it('every fresh grant of a key is above every token it had before, with one master and then two restarted empty', async () => {
    const keyPrefix = uniquePrefix('rl-fence-restart');
    const urls = masters.map((m) => m.url);
    apps = await Promise.all(
      [0, 1, 2].map(() =>
        createRedlockApp(urls, { keyPrefix, lock: { leaseTime: 2_000, waitTimeout: 3_000 }, redlock: { requestTimeout: 300 } }),
      ),
    );
    const services = apps.map((app) => app.get(LockService));
    const names = Array.from({ length: 8 }, (_, i) => `k${i}`);
    const history = new FenceHistory();
    const failures = new Map<string, number>();
    let running = true;

    const pick = <T>(next: () => number, list: readonly T[]): T => list[Math.floor(next() * list.length)];
    const hold = async (next: () => number, handle: LockHandle | null) => {
      if (!handle) return;
      await sleep(Math.floor(next() * 15));
      await handle.release().catch(() => undefined);
    };
    const take = <T extends LockHandle | null>(label: string, kind: GrantKind, acquire: () => Promise<T>) =>
      history.take(label, kind, acquire);

    type Operation = (locks: LockService, next: () => number, who: string) => Promise<void>;
    const operations: Operation[] = [
      async (locks, next, who) => {
        const name = pick(next, names);
        await hold(next, await take(`${who} plain ${name}`, 'fresh', () => locks.acquire(name)));
      },
      async (locks, next, who) => {
        const name = pick(next, names);
        await hold(next, await take(`${who} tryAcquire ${name}`, 'fresh', () => locks.tryAcquire(name)));
      },
      async (locks, next, who) => {
        const name = pick(next, names);
        const askedAt = performance.now();
        await locks.using(name, async (outer) => {
          history.record(name, outer.fencingToken, 'fresh', askedAt, performance.now(), `${who} section ${name}`);
          await hold(next, await take(`${who} re-entry ${name}`, 'joined', () => locks.acquire(name)));
        });
      },
      async (locks, next, who) => {
        const first = pick(next, names);
        const second = pick(
          next,
          names.filter((n) => n !== first),
        );
        await hold(next, await take(`${who} multi ${first}+${second}`, 'fresh', () => locks.acquire([first, second])));
      },
    ];
    const client = async (locks: LockService, seed: number, who: string) => {
      const next = seededRandom(seed);
      while (running) {
        try {
          await pick(next, operations)(locks, next, who);
        } catch (error) {
          const name = error instanceof Error ? error.constructor.name : 'non-error';
          failures.set(name, (failures.get(name) ?? 0) + 1);
          await sleep(5);
        }
      }
    };
    const clients = services.flatMap((locks, s) => [0, 1].map((w) => client(locks, SEED + 31 * s + w, `app${s}.w${w}`)));

    const traffic = async (phase: string, ms: number) => {
      history.phase = phase;
      const before = history.grants.length;
      await sleep(ms);
      await holdsWithin(() => history.grants.length >= before + 20, 20_000);
    };
    const restart = async (which: number[]) => {
      await Promise.all(which.map((i) => masters[i].restart({ downtimeMs: 1_100 })));
      await mastersReconnected(apps);
    };

    await traffic('start', 2_000);
    for (const i of [0, 1, 2]) {
      history.phase = `master ${i} down`;
      await restart([i]);
      await traffic(`after master ${i} restarted empty`, 2_000);
    }
    history.phase = 'masters 0 and 1 down';
    await restart([0, 1]);
    await traffic('after masters 0 and 1 restarted empty', 2_000);
    running = false;
    await Promise.all(clients);

    const counts = history.countByPhase();
    console.log(
      `Redlock fences with masters restarted empty (seed ${SEED}): ${history.grants.length} tokens, ` +
        `failed operations ${JSON.stringify(Object.fromEntries(failures))}, per phase ${JSON.stringify(counts)}`,
    );
    expect(history.violations()).toEqual([]);
    const phases = ['start', ...[0, 1, 2].map((i) => `after master ${i} restarted empty`), 'after masters 0 and 1 restarted empty'];
    expect(phases.filter((phase) => (counts[phase] ?? 0) < 20)).toEqual([]);
    expect(unhandled.reasons.map(errorMessage)).toEqual([]);
  }, 120_000);
});
