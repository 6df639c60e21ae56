import type { Provider } from '@nestjs/common';
import { RedisKeySpace } from '../core/keys/redis-key-space.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { ConsumerRegistry } from './consumer-registry.js';
import { CancelListener } from './consumer/cancel-listener.js';
import { DelayQueueOrchestrator } from './delay-queue.orchestrator.js';
import { DelayQueueService } from './delay-queue.service.js';
import { DelayedHandlerMetadataAccessor } from './delayed-handler-metadata.accessor.js';
import { DelayedHandlerExplorer } from './delayed-handler.explorer.js';
import { JobEnqueuer, TransactionalOutbox } from './job-enqueuer.js';
import { JobCommands } from './job-commands.js';
import { JobWaiters } from './job-waiters.js';
import { JobWriter } from './writer/job-writer.js';
import { TopicShards } from './jobs/topic-shards.js';
import { TopicDirectory } from './topic-directory.js';
import { TopicInspector } from './topic-inspector.js';
import { RepeatScheduler } from './repeat/repeat-scheduler.js';
import { JobOutboxRelay } from './outbox-relay/job-outbox-relay.js';
import { jobOutboxRelayProvider } from './outbox-relay/job-outbox-relay.provider.js';
import { ScheduleChangeRouter } from './outbox-relay/schedule-change-router.js';

/**
 * The delay-queue engine: where each topic's jobs live (`TopicShards`), the write path (`JobWriter`,
 * `JobEnqueuer`, and with `delayQueue.outbox` the relay, the enqueuer's `TransactionalOutbox`), where
 * repeat schedule changes go, the service, the consumers (`ConsumerRegistry`, which builds them for
 * `consume()` and `@OnDelayed`), the `@OnDelayed` discovery and the lifecycle (orchestrator), the
 * read side (what a topic holds, which topics exist) and the commands.
 */
export const delayQueueProviders: Provider[] = [
  {
    provide: TopicShards,
    useFactory: (keySpace: RedisKeySpace, config: RedisLockConfig) => new TopicShards(keySpace, config.delayQueue.topics ?? new Map()),
    inject: [RedisKeySpace, REDIS_LOCK_CONFIG],
  },
  RepeatScheduler,
  JobWriter,
  jobOutboxRelayProvider,
  {
    provide: TransactionalOutbox,
    useFactory: (relay: JobOutboxRelay | null): TransactionalOutbox | null => relay,
    inject: [JobOutboxRelay],
  },
  JobEnqueuer,
  ScheduleChangeRouter,
  JobCommands,
  CancelListener,
  JobWaiters,
  ConsumerRegistry,
  DelayQueueService,
  DelayedHandlerMetadataAccessor,
  DelayedHandlerExplorer,
  DelayQueueOrchestrator,
  TopicInspector,
  TopicDirectory,
];
