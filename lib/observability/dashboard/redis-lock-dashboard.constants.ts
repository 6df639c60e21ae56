/** Injection token of the resolved dashboard options. */
export const REDIS_LOCK_DASHBOARD_OPTIONS = Symbol.for('nestjs-redis-lock:dashboard-options');

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

/** Most topics sampled for the backlog plot. */
export const MAX_SAMPLED_TOPICS = 50;
