import { AsyncLocalStorage } from 'node:async_hooks';
import type { TestingModule } from '@nestjs/testing';
import type { Pool, PoolClient } from 'pg';
import {
  DelayQueueService,
  RedisLockEvents,
  runInTransaction,
  type RedisLockEventMap,
  type RedisLockEventName,
} from '../../../lib/index.js';
import type { OutboxRelayOptions } from '../../../lib/core/options/redis-lock-module-options.interface.js';
import type { RedisConnectionOptions } from '../../../lib/core/options/redis-lock-module-options.interface.js';
import type { JobOutboxStore } from '../../../lib/core/outbox-port/job-outbox-store.js';
import { initRedisLockTestingModule } from '../../../lib/testing/index.js';

/** One delivery of a job to a consumer. */
export interface RecordedRun {
  readonly id: string;
  readonly payload: unknown;
  readonly at: number;
}

/** A RedisLockModule app with an outbox, consuming `topics` into `runs`. */
export interface OutboxApp {
  readonly app: TestingModule;
  readonly queue: DelayQueueService;
  readonly events: RedisLockEvents;
  readonly runs: RecordedRun[];
  /** Events of `names` since start, in order. */
  readonly seen: Array<{ name: RedisLockEventName; event: unknown }>;
  close(): Promise<void>;
}

const RECORDED_EVENTS: RedisLockEventName[] = ['outbox.relayed', 'outbox.relay.failed', 'outbox.row.parked'];

export async function startOutboxApp(options: {
  redis: string | RedisConnectionOptions;
  keyPrefix: string;
  outbox: JobOutboxStore;
  topics?: string[];
  outboxRelay?: OutboxRelayOptions;
  /** Runs delivered to this shared log (several apps, one checker). */
  runs?: RecordedRun[];
}): Promise<OutboxApp> {
  const app = await initRedisLockTestingModule({
    redis: options.redis,
    redisLock: {
      keyPrefix: options.keyPrefix,
      connectTimeout: 60_000,
      delayQueue: { outbox: options.outbox, outboxRelay: { pollInterval: 200, minAge: 500, ...options.outboxRelay } },
    },
  });
  const queue = app.get(DelayQueueService);
  const events = app.get(RedisLockEvents);
  const runs = options.runs ?? [];
  const seen: OutboxApp['seen'] = [];
  for (const name of RECORDED_EVENTS) {
    events.on(name, ((event: RedisLockEventMap[typeof name]) => seen.push({ name, event })) as never);
  }
  for (const topic of options.topics ?? []) {
    queue.consume(topic, (payload, job) => void runs.push({ id: job.id, payload, at: Date.now() }), { concurrency: 4 });
  }
  return { app, queue, events, runs, seen, close: () => app.close() };
}

/**
 * Transactions on a `pg` pool the way an application without an ORM runs them: the client of the
 * current transaction in an AsyncLocalStorage, inside the library's unit of work (so that its
 * after-commit hooks run after COMMIT).
 */
export class PgTransactions {
  private readonly storage = new AsyncLocalStorage<PoolClient>();

  constructor(private readonly pool: Pool) {}

  /** The client of the calling context's transaction (for `inPgTransaction`). */
  current = (): PoolClient | undefined => this.storage.getStore();

  /** Runs `work` in BEGIN … COMMIT (ROLLBACK when it throws), inside `runInTransaction`. */
  run<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    return runInTransaction(async () => {
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN');
        const result = await this.storage.run(client, () => work(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    });
  }
}

/** Ids delivered more than once, and expected ids never delivered. */
export function checkExactlyOnce(runs: readonly RecordedRun[], expected: readonly string[]): { duplicated: string[]; missing: string[] } {
  const counts = new Map<string, number>();
  for (const run of runs) counts.set(run.id, (counts.get(run.id) ?? 0) + 1);
  return {
    duplicated: [...counts].filter(([, n]) => n > 1).map(([id]) => id),
    missing: expected.filter((id) => !counts.has(id)),
  };
}
