import { RedisLockError } from './redis-lock.error.js';

/** A delayed-job topic name the library does not accept. Nothing was written. */
export class InvalidTopicError extends RedisLockError {
  readonly code = 'INVALID_TOPIC';

  constructor(
    /** The name that was refused, as given. */
    readonly topic: unknown,
    problem: string,
    /** Where the name came from, e.g. `@OnDelayed on OrderHandlers.expire`, when not a direct call. */
    where?: string,
  ) {
    super(
      `Invalid topic ${preview(topic)}${where ? ` (${where})` : ''}: ${problem}. ` +
        "Use 1-128 characters of letters, digits and '_', '.', ':', '-', '/', '#', e.g. 'order.expire'.",
    );
  }
}

function preview(topic: unknown): string {
  if (typeof topic !== 'string') return `(${topic === null ? 'null' : typeof topic})`;
  return JSON.stringify(topic.length > 80 ? `${topic.slice(0, 80)}…` : topic);
}
