/** Injection token of the resolved `RedisLockMetricsOptions`. */
export const REDIS_LOCK_METRICS_OPTIONS = Symbol.for('nestjs-redis-lock:metrics-options');

/** Default histogram buckets, in seconds: 1 ms to 60 s. */
export const DEFAULT_DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Default `maxTopics`: distinct `topic` label values before the rest are counted as `<other>`. */
export const DEFAULT_MAX_TOPICS = 100;
