import type { RedisScript } from '../../core/redis/redis-script.js';
import { ackJobsScript } from './ack-jobs.lua.js';
import { appendJobLogsScript } from './append-job-logs.lua.js';
import { advanceRepeatScript } from './advance-repeat.lua.js';
import { blockTopicScript } from './block-topic.lua.js';
import { cancelJobScript } from './cancel-job.lua.js';
import { cancelWaitingJobScript } from './cancel-waiting-job.lua.js';
import { claimDueJobsScript } from './claim-due-jobs.lua.js';
import { deleteDeadJobScript } from './delete-dead-job.lua.js';
import { extendJobsScript } from './extend-jobs.lua.js';
import { failJobScript } from './fail-job.lua.js';
import { listJobsScript } from './list-jobs.lua.js';
import { pauseTopicScript } from './pause-topic.lua.js';
import { postponeRateLimitedJobScript } from './postpone-rate-limited-job.lua.js';
import { readDeadLettersScript } from './read-dead-letters.lua.js';
import { readJobScript } from './read-job.lua.js';
import { readRepeatsScript } from './read-repeats.lua.js';
import { reassertRemovalsScript } from './reassert-removals.lua.js';
import { removeRepeatScript } from './remove-repeat.lua.js';
import { releaseGroupTurnScript } from './release-group-turn.lua.js';
import { releaseJobsScript } from './release-jobs.lua.js';
import { rescheduleJobScript } from './reschedule-job.lua.js';
import { updatePayloadScript } from './update-payload.lua.js';
import { drainWaitingJobsScript } from './drain-waiting-jobs.lua.js';
import { cleanFinishedJobsScript } from './clean-finished-jobs.lua.js';
import { retryDeadJobsScript } from './retry-dead-jobs.lua.js';
import { scheduleJobsScript } from './schedule-jobs.lua.js';
import { setGroupLimitScript } from './set-group-limit.lua.js';
import { setProgressScript } from './set-progress.lua.js';
import { topicStatsScript } from './topic-stats.lua.js';
import { upsertRepeatScript } from './upsert-repeat.lua.js';
import { watchJobScript } from './watch-job.lua.js';
import { writeOutboxJobScript } from './write-outbox-job.lua.js';

/** Every script of the delay-queue engine (one per `*.lua.ts` file of this folder), for preloading at bootstrap. */
export const ALL_DELAY_QUEUE_SCRIPTS: readonly RedisScript[] = [
  ackJobsScript,
  appendJobLogsScript,
  advanceRepeatScript,
  blockTopicScript,
  cancelJobScript,
  cancelWaitingJobScript,
  claimDueJobsScript,
  deleteDeadJobScript,
  extendJobsScript,
  failJobScript,
  listJobsScript,
  pauseTopicScript,
  postponeRateLimitedJobScript,
  readDeadLettersScript,
  readJobScript,
  readRepeatsScript,
  reassertRemovalsScript,
  removeRepeatScript,
  releaseGroupTurnScript,
  releaseJobsScript,
  rescheduleJobScript,
  updatePayloadScript,
  drainWaitingJobsScript,
  cleanFinishedJobsScript,
  retryDeadJobsScript,
  scheduleJobsScript,
  setGroupLimitScript,
  setProgressScript,
  topicStatsScript,
  upsertRepeatScript,
  watchJobScript,
  writeOutboxJobScript,
];
