/**
 * Options of `DelayQueueService.waitFor()`.
 *
 * @example
 * const result = await delayQueue.waitFor('report.build', id, { timeout: 60_000 });
 */
export interface WaitForOptions {
  /**
   * How long to wait, in ms, before rejecting with `JobWaitTimeoutError` (the job is left as it is).
   * Default: no timeout, the wait lasts until the job finishes or the application shuts down.
   */
  timeout?: number;
}
