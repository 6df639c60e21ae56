import type { TestingModule } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { DelayQueueService, LockService, RedisLockEvents, type RedisLockModuleOptions } from '../../lib/index.js';
import { JobCommands } from '../../lib/delay-queue/job-commands.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { FaultProxy, type LostReply } from '../../tools/fault-proxy.js';
import { createLockApp, rawRedis, testRedisUrl, uniquePrefix } from './test-app.js';
import { waitFor, within } from './timing.js';

/** A Lua script of the library, as `FaultProxy.script` matches it. */
export interface ScriptRef {
  readonly name: string;
  readonly sha: string;
  readonly source: string;
}

/** What one row sees: the services under test (through the proxy), a peer process, and Redis itself. */
export interface LostReplyContext {
  /** Unique to the row: every key the row touches starts with it. */
  readonly keyPrefix: string;
  /** The library on a connection through the fault proxy: the operation under test runs here. */
  readonly locks: LockService;
  readonly queue: DelayQueueService;
  /** The commands the dashboard uses (delete a dead letter, cancel a waiting job), on the proxied connection. */
  readonly commands: JobCommands;
  /** Events of the module under test (job.retried, job.dead, lock.lost, ...). */
  readonly events: RedisLockEvents;
  /** The same key prefix on a direct connection: another process, and an observer through the API. */
  readonly peerLocks: LockService;
  readonly peerQueue: DelayQueueService;
  /** A plain client straight to Redis, for looking at the keys from outside. */
  readonly redis: Redis;
  /** The key layout of this row's prefix. */
  readonly keys: RedisKeySpace;
  /** Resolves when the armed fault has fired (the reply of the chosen call was dropped after Redis ran it). */
  readonly lost: Promise<LostReply>;
}

/**
 * One row of the table: build the state, run one operation through the public API while the reply
 * of the `nth` call of `script` on the row's keys is lost (ioredis re-sends it, so it runs twice),
 * then check the invariants from outside.
 */
export interface LostReplyRow<S = unknown, R = unknown> {
  readonly name: string;
  /** The script whose reply is lost; with several, the first matching call of any of them (one operation that may take either path). */
  readonly script: ScriptRef | readonly ScriptRef[];
  /** Narrows the calls further (the row's key prefix always applies), e.g. to those carrying one job id. */
  readonly where?: (keysAndArgs: readonly string[]) => boolean;
  /** Which matching call loses its reply, counted from when the fault is armed (default 1). */
  readonly nth?: number;
  /** How long the row waits for its fault to fire (default FAULT_WAIT_MS): longer for a call a periodic task makes. */
  readonly faultWaitMs?: number;
  /** Module options of both the proxied and the peer app (the key prefix and connection are the harness's). */
  readonly options?: RedisLockModuleOptions;
  arrange?(ctx: Omit<LostReplyContext, 'lost'>): Promise<S>;
  /** Runs with the fault armed; may wait for `ctx.lost` itself when the call happens in the background. */
  act(ctx: LostReplyContext, state: S): Promise<R>;
  check(ctx: LostReplyContext, state: S, result: R): Promise<void>;
}

/** Keeps the row's own types while putting rows of different types in one table. */
export function row<S, R>(spec: LostReplyRow<S, R>): LostReplyRow<unknown, unknown> {
  return spec as LostReplyRow<unknown, unknown>;
}

/** How long a row waits for its fault to fire, and then for the re-sent call to reach Redis. */
const FAULT_WAIT_MS = 10_000;

/**
 * Runs lost-reply rows against the run's Redis through one fault proxy. The scripts are loaded
 * into Redis's cache first, so the dropped reply is that of a run of the script (checked: an error
 * reply such as NOSCRIPT fails the row), and every row proves its fault fired and its call was
 * re-sent, so no row can pass without the fault.
 */
export class LostReplyHarness {
  private constructor(
    private readonly proxy: FaultProxy,
    private readonly redis: Redis,
  ) {}

  static async start(scripts: readonly ScriptRef[]): Promise<LostReplyHarness> {
    const proxy = await FaultProxy.start({ port: Number(new URL(testRedisUrl()).port) });
    const redis = rawRedis();
    await Promise.all(scripts.map((script) => redis.script('LOAD', script.source)));
    return new LostReplyHarness(proxy, redis);
  }

  async stop(): Promise<void> {
    this.redis.disconnect();
    await this.proxy.stop();
  }

  async run(spec: LostReplyRow<unknown, unknown>): Promise<void> {
    const keyPrefix = uniquePrefix('lost');
    const apps: TestingModule[] = await Promise.all([
      createLockApp({ ...spec.options, redis: this.proxy.url, keyPrefix }),
      createLockApp({ ...spec.options, keyPrefix }),
    ]);
    // The resets this suite causes make the module log connection warnings: expected here.
    for (const app of apps) app.useLogger(false);
    const [proxied, peer] = apps;
    const scripts: readonly ScriptRef[] = Array.isArray(spec.script) ? spec.script : [spec.script as ScriptRef];
    const name = scripts.map((script) => script.name).join(' or ');
    const where = (keysAndArgs: readonly string[]) =>
      keysAndArgs.some((value) => value.startsWith(`${keyPrefix}:`)) && (spec.where?.(keysAndArgs) ?? true);
    const matchers = scripts.map((script) => FaultProxy.script(script, where));
    const ours = (args: readonly string[]) => matchers.some((match) => match(args));
    const seen = this.proxy.observe(ours);
    try {
      const base = {
        keyPrefix,
        locks: proxied.get(LockService),
        queue: proxied.get(DelayQueueService),
        commands: proxied.get(JobCommands),
        events: proxied.get(RedisLockEvents),
        peerLocks: peer.get(LockService),
        peerQueue: peer.get(DelayQueueService),
        redis: this.redis,
        keys: new RedisKeySpace(keyPrefix),
      };
      const arranged = spec.arrange ? await spec.arrange(base) : undefined;
      const nth = spec.nth ?? 1;
      const before = seen.count;
      // Bounded, so a row whose operation never makes the call fails with this message instead of hanging.
      const lost = within(
        this.proxy.loseReplyDetailed(ours, nth),
        spec.faultWaitMs ?? FAULT_WAIT_MS,
        `the lost reply of ${name} (call ${nth} on ${keyPrefix}) never happened`,
      );
      lost.catch(() => undefined); // awaited below (and maybe by the row): not an unhandled rejection meanwhile
      const ctx: LostReplyContext = { ...base, lost };
      const result = await spec.act(ctx, arranged);
      const fired = await lost;
      if (fired.reply.startsWith('-')) {
        throw new Error(`The lost reply of ${name} was an error (the script did not run): ${fired.reply.trim()}`);
      }
      // The call whose reply was lost reaches Redis a second time (ioredis re-sends it after reconnecting).
      await waitFor(
        () => seen.count - before >= nth + 1,
        FAULT_WAIT_MS,
        `${name} to be sent again after its reply was lost (seen ${seen.count - before} call(s))`,
      );
      await spec.check(ctx, arranged, result);
    } finally {
      seen.stop();
      this.proxy.disarmLostReplies();
      await Promise.all(apps.map((app) => app.close()));
    }
  }
}

/** Fencing tokens are decimal strings: compare them as integers. */
export function fence(token: string): bigint {
  return BigInt(token);
}
