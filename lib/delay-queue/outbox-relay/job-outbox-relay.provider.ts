import { Logger, type FactoryProvider } from '@nestjs/common';
import { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../../core/options/redis-lock-config.js';
import { RedisConnection } from '../../core/connection/redis-connection.js';
import { TransactionSynchronizer } from '../../core/transaction/transaction-synchronizer.interface.js';
import { TopicShards } from '../jobs/topic-shards.js';
import { RepeatScheduler } from '../repeat/repeat-scheduler.js';
import { JobWriter } from '../writer/job-writer.js';
import { JobOutboxRelay } from './job-outbox-relay.js';
import { OutboxJobWriter } from './outbox-job-writer.js';

/**
 * The outbox relay of `delayQueue.outbox`, provided under its class; null without an outbox. Every
 * write goes through the module's one `JobWriter`, and the jobs it writes are reported as the
 * queue's `job.scheduled` events.
 */
export const jobOutboxRelayProvider: FactoryProvider<JobOutboxRelay | null> = {
  provide: JobOutboxRelay,
  useFactory: (
    config: RedisLockConfig,
    connection: RedisConnection,
    transactions: TransactionSynchronizer,
    events: RedisLockEvents,
    shards: TopicShards,
    repeats: RepeatScheduler,
    writer: JobWriter,
  ) => {
    if (!config.delayQueue.outbox) return null;
    return new JobOutboxRelay(
      config.delayQueue.outbox,
      new OutboxJobWriter(connection, shards, repeats, writer),
      transactions,
      events,
      new Logger('DelayQueueOutbox'),
      (topic, rows) =>
        writer.reportScheduled(
          topic,
          rows.map((row) => ({ ...row, id: row.jobId, kind: row.kind })),
        ),
      connection.outages,
    );
  },
  inject: [REDIS_LOCK_CONFIG, RedisConnection, TransactionSynchronizer, RedisLockEvents, TopicShards, RepeatScheduler, JobWriter],
};
