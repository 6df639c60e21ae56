/**
 * Longest lease accepted wherever a lease is taken (a lock's `leaseTime`, a semaphore permit's, the
 * `ttl` of `@OnOneInstance` and `@LeaderElection`): 365 days. Leases longer than setTimeout's bound
 * (`MAX_TIMER_MS`, about 24.8 days) are kept by timers that never ask for more than that bound
 * (`timerDelay`, `DeadlineList`, `leaseRenewalInterval`); Redis keeps them with PEXPIRE, which takes
 * any 64-bit count of ms.
 */
export const MAX_LEASE_MS = 365 * 86_400_000;

/**
 * Ranges of the options that are set for the module and overridden per call, consumer or job: one
 * range each, so an override accepts exactly what the module-wide option accepts. Durations are in
 * ms and end at `MAX_TIMER_MS`, except leases, which end at `MAX_LEASE_MS`.
 */
export const OPTION_BOUNDS = {
  leaseTime: { min: 10, max: MAX_LEASE_MS },
  waitTimeout: { min: 0 },
  concurrency: { min: 1, max: 10_000 },
  visibilityTimeout: { min: 100 },
  maxAttempts: { min: 1, max: 1_000_000 },
  shutdownTimeout: { min: 0 },
} as const;

/** Default `delayQueue.maxPayloadBytes`: 512 KiB of JSON. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 524_288;

/** Highest `delayQueue.maxPayloadBytes`: Redis's largest string value (`proto-max-bulk-len`'s default, 512 MiB). */
export const MAX_PAYLOAD_BYTES_LIMIT = 536_870_912;
