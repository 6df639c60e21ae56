import { checkedOnRead } from '../../core/time/lease-checked-signal.js';
import type { JobContext } from '../interfaces/job-context.interface.js';
import { controllerOf, type HeldJob } from './held-job.js';

/** What a delivery's context reads its fields from. */
export interface DeliveryFacts {
  readonly topic: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly createdAt: number;
  readonly group?: string;
}

/**
 * The `JobContext` a handler gets: one class, so every context has the same shape (no accessor in an
 * object literal, which puts each one in dictionary mode). `signal` is made on first read: the job's
 * abort controller (shared with the consumer, which aborts it on cancel, lost visibility or shutdown)
 * with reads that check the claim's visibility deadline (`checkDeadline`), so a handler that runs
 * again after a pause sees the loss at its first read. A handler that never reads it costs neither.
 */
export class DeliveryContext implements JobContext {
  readonly id: string;
  readonly topic: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly scheduledAt: Date;
  readonly claimedAt: Date;
  readonly createdAt: Date;
  readonly group?: string;
  readonly fencingToken: string;
  readonly progress: (value: unknown) => Promise<void>;
  readonly log: (message: string) => void;
  // JS private: not in the context's keys, its JSON or a spread of it.
  readonly #job: HeldJob;
  readonly #checkDeadline: (job: HeldJob) => void;
  #signal?: AbortSignal;

  constructor(
    job: HeldJob,
    facts: DeliveryFacts,
    checkDeadline: (job: HeldJob) => void,
    recordProgress: (job: HeldJob, value: unknown, attempt: number) => Promise<void>,
    appendLog: (job: HeldJob, message: unknown) => void,
  ) {
    this.#job = job;
    this.#checkDeadline = checkDeadline;
    this.id = job.id;
    this.topic = facts.topic;
    this.attempt = facts.attempt;
    this.maxAttempts = facts.maxAttempts;
    this.scheduledAt = new Date(job.dueMs);
    this.claimedAt = new Date(job.claimedAtMs);
    this.createdAt = new Date(facts.createdAt);
    this.group = facts.group;
    this.fencingToken = job.token;
    this.progress = (value: unknown) => recordProgress(job, value, facts.attempt);
    this.log = (message: string) => appendLog(job, message);
  }

  get signal(): AbortSignal {
    const job = this.#job;
    const check = this.#checkDeadline;
    return (this.#signal ??= checkedOnRead(controllerOf(job).signal, () => check(job)));
  }
}
