import { RedisLockError } from './redis-lock.error.js';

/**
 * Thrown by a delayed-job handler when retrying cannot help (a payload that will never validate, an
 * order that no longer exists): the job goes to the dead letters after this attempt, whatever
 * attempts it has left. Its message and `cause` are kept with the dead letter (`lastError`,
 * `lastErrorStack`) as for any failure, `job.dead` reports it with `unrecoverable: true`, and
 * `retryDead()` requeues it like any dead letter. Any other error is retried as before.
 * See docs/delayed-jobs.md (Errors that must not retry).
 *
 * @example
 * \@OnDelayed('invoice.send')
 * async send(payload: { orderId: string }) {
 *   const order = await this.orders.find(payload.orderId);
 *   if (!order) throw new UnrecoverableJobError(`order ${payload.orderId} is gone`);
 *   await this.mailer.send(order);
 * }
 */
export class UnrecoverableJobError extends RedisLockError {
  readonly code = 'UNRECOVERABLE_JOB';

  constructor(
    /** Why the job cannot succeed: kept as the dead letter's error. */
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
