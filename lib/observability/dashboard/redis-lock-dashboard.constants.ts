/** Injection token of the resolved dashboard options. */
export const REDIS_LOCK_DASHBOARD_OPTIONS = Symbol('redis-lock:dashboard-options');

/** Injection token of the `RedisKeySpace` of the application's `RedisLockModule`. */
export const DASHBOARD_KEY_SPACE = Symbol('redis-lock:dashboard-key-space');
/** `TopicShards` of the application: where each (possibly sharded) topic's keys are. */
export const DASHBOARD_TOPIC_SHARDS = Symbol('redis-lock:dashboard-topic-shards');

/**
 * Header every state-changing request must carry. Browsers never add a custom header to a
 * cross-site form post, so a page on another origin cannot make a signed-in operator's browser
 * retry or delete jobs (CSRF); the dashboard's own page always sends it.
 */
export const DASHBOARD_ACTION_HEADER = 'x-redis-lock-dashboard';

/** Most jobs one list request returns. */
export const MAX_JOB_LIST_LIMIT = 500;

/** Longest payload preview in job lists, in characters; the full payload is one click away. */
export const PAYLOAD_PREVIEW_LENGTH = 240;

/**
 * Bytes of each payload a job list reads from Redis. A UTF-16 code unit takes at most 3 bytes of
 * UTF-8, so this many bytes always hold a whole preview of PAYLOAD_PREVIEW_LENGTH characters.
 */
export const PAYLOAD_PREVIEW_BYTES = 3 * PAYLOAD_PREVIEW_LENGTH + 48;

/**
 * Longest job header (attempts, times, last error: everything before the payload) a job list reads;
 * the consumer keeps last errors to 2000 characters, at most 12 kB as escaped JSON. A longer header
 * was not written by this library and is listed as unreadable.
 */
export const MAX_LISTED_HEADER_BYTES = 16_384;

/** Most topics sampled for the backlog plot. */
export const MAX_SAMPLED_TOPICS = 50;
