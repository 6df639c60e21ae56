/** Metadata key of `@OnDelayed` (namespaced, like `bullmq:processor_metadata`). */
export const ON_DELAYED_METADATA = 'nestjs-redis-lock:on_delayed';

/** Metadata key of `@OnJobEvent`. */
export const ON_JOB_EVENT_METADATA = 'nestjs-redis-lock:on_job_event';

/**
 * Ordering slots per millisecond in a due score: `score = dueMs * DUE_SCORE_SLOTS + slot`. Jobs due in
 * the same millisecond take increasing slots, so they run in the order they were scheduled (FIFO);
 * a millisecond whose slots are full spills into the next one (a job is then due 1 ms later, never
 * earlier). 2^11 keeps every score an exact double until the year 2109.
 */
export const DUE_SCORE_SLOTS = 2048;

/** Largest `schedule(…, { priority })` (BullMQ's bound): `priority * PRIORITY_SEQ_SPAN + seq` stays an exact double. */
export const MAX_PRIORITY = 2_097_152;

/**
 * Score of a due job in a topic that uses priorities (the `prioritized` zset): `priority * SPAN + seq`,
 * seq the topic's counter of jobs made ready, modulo SPAN (2^31: under 2^53 with the largest priority).
 */
export const PRIORITY_SEQ_SPAN = 2 ** 31;

/** Jobs that came due moved into the `prioritized` set by one claim at most (as BullMQ promotes 1000 delayed jobs a call). */
export const PRIORITY_MOVE_BATCH = 1000;

/** Latest due time accepted (2100-01-01 UTC), far inside the exact range of the score encoding. */
export const MAX_DUE_MS = Date.UTC(2100, 0, 1);

/** Jobs claimed by one claim script at most, so one call never blocks Redis for long. */
export const MAX_CLAIM_BATCH = 1000;

/** Jobs written by one schedule script at most; `scheduleMany` sends larger batches in several calls. */
export const SCHEDULE_BATCH = 500;

/** Schedule script calls of one `scheduleMany` on the connection at once (see JobWriter). */
export const SCHEDULE_WINDOW = 2;

/** Default of `ConsumerOptions.maxIdleWait`. */
export const DEFAULT_MAX_IDLE_WAIT_MS = 10_000;

/** Longest job id, in UTF-8 bytes. */
export const MAX_JOB_ID_BYTES = 1024;

/** Longest group name (`schedule(…, { group })`), in UTF-8 bytes. */
export const MAX_GROUP_BYTES = 256;

/** Longest failure message kept with a job. */
export const MAX_ERROR_MESSAGE_LENGTH = 2000;

/** Longest failure stack kept with a job (and logged), causes included, in characters: about 50 frames. */
export const MAX_ERROR_STACK_LENGTH = 8000;

/**
 * How long an operation record (see operation-record.ts) lives when its caller never got the reply
 * (it is deleted as soon as the reply arrives): a re-sent schedule, cancel or reschedule, or a
 * retried after-commit write, arriving within it answers as the first run did and changes nothing.
 * A claim's record lives for the visibility timeout instead.
 */
export const OPERATION_RECORD_TTL_MS = 10 * 60_000;

/** Most lines a job's log keeps (`JobContext.log`): a longer log loses its oldest lines first. */
export const JOB_LOG_MAX_LINES = 1000;

/** Longest line of a job's log, in characters: a longer message keeps its first this many. */
export const JOB_LOG_MAX_LINE_LENGTH = 2000;
