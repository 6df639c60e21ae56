import { escapeKeyPart } from './escape-key-part.js';

/**
 * The one place that knows the Redis key layout (see DESIGN.md, "Redis data model").
 *
 * Every key of one lock or one topic carries the same hash tag, so each script touches a single
 * cluster slot. User names are escaped before they are placed between the braces.
 */
export class RedisKeySpace {
  constructor(readonly prefix: string) {}

  /** The keys of one named lock: owner hash, fencing counter, wake channel, fair queue. */
  lock(name: string): LockKeys {
    const base = `${this.prefix}:lock:{${escapeKeyPart(name)}}`;
    return {
      name,
      owners: base,
      fence: `${base}:fence`,
      wakeChannel: `${base}:wake`,
      queue: `${base}:queue`,
      timeouts: `${base}:timeouts`,
      leases: `${base}:leases`,
      waitingWriters: `${base}:writers`,
    };
  }

  /** The keys of one named semaphore. */
  semaphore(name: string): SemaphoreKeys {
    const base = `${this.prefix}:sem:{${escapeKeyPart(name, 'semaphore key')}}`;
    return { name, permits: base, fence: `${base}:fence`, wakeChannel: `${base}:wake`, grants: `${base}:grants` };
  }

  /** The keys of one delayed-job topic. */
  topic(topic: string): TopicKeys {
    const base = `${this.prefix}:dq:{${escapeKeyPart(topic, 'topic name')}}`;
    return {
      topic,
      due: `${base}:due`,
      jobs: `${base}:jobs`,
      active: `${base}:active`,
      dead: `${base}:dead`,
      marker: `${base}:marker`,
    };
  }
}

export interface LockKeys {
  readonly name: string;
  readonly owners: string;
  readonly fence: string;
  readonly wakeChannel: string;
  /** Fair lock: waiters in arrival order, and each waiter's liveness deadline. */
  readonly queue: string;
  readonly timeouts: string;
  /** Read/write lock: each holder's lease deadline, and the writers waiting (they block new readers). */
  readonly leases: string;
  readonly waitingWriters: string;
}

export interface SemaphoreKeys {
  readonly name: string;
  readonly permits: string;
  readonly fence: string;
  readonly wakeChannel: string;
  /** Each held permit's fencing token, so an acquire that runs twice answers with the same one. */
  readonly grants: string;
}

export interface TopicKeys {
  readonly topic: string;
  readonly due: string;
  readonly jobs: string;
  readonly active: string;
  readonly dead: string;
  readonly marker: string;
}
