import { errorMessage } from '../core/errors/error-message.js';
import { DUE_SCORE_SLOTS } from './jobs/delay-queue.constants.js';
import { decodeHeader } from './jobs/job-codec.js';
import type { DelayedJobState } from './interfaces/delayed-job.interface.js';
import type { ListedRow } from './scripts/list-jobs.lua.js';
import type { DedupeOptions } from './interfaces/dedupe-options.interface.js';
import { decodeDedupe } from './jobs/dedupe-spec.js';

/**
 * The states a job list can show; 'due' and 'scheduled' split the waiting jobs at the server's now;
 * 'waiting-group' lists the jobs waiting for their group's turn; 'completed' the jobs kept by a
 * consumer with `keepCompleted`.
 */
export type ListedJobState = DelayedJobState;

/** Every `ListedJobState`, in the order a page shows them. */
export const LISTED_JOB_STATES: readonly ListedJobState[] = ['due', 'scheduled', 'active', 'dead', 'completed', 'waiting-group'];

/** A job as listed: its payload shortened to a preview. */
export interface ListedJob {
  /** The job id. */
  readonly id: string;
  /** Where the job is now. */
  readonly state: ListedJobState;
  /** Delivery attempts so far. */
  readonly attempts: number;
  /** The job's `maxAttempts`, when known. */
  readonly maxAttempts?: number;
  /** When the job was scheduled (epoch ms). */
  readonly createdAt: number;
  /** Due time of a waiting job (also of one waiting for its group's turn). */
  readonly dueAt?: number;
  /** Visibility deadline of a running job. */
  readonly visibleUntil?: number;
  /** When a dead job died. */
  readonly diedAt?: number;
  /** When a kept completed job finished. */
  readonly finishedAt?: number;
  /** The failure message of the last failed attempt, if any. */
  readonly lastError?: string;
  /** The last progress its handler recorded (`JobContext.progress`), if any. */
  readonly progress?: unknown;
  /** Its priority among due jobs (`schedule(…, { priority })`), when it has one above 0. */
  readonly priority?: number;
  /** The dedupe it was scheduled with (`schedule(…, { dedupe })`), when it had one. */
  readonly dedupe?: Required<DedupeOptions>;
  /** The payload as JSON text, shortened to a preview. */
  readonly payloadPreview: string;
  /** Length of the whole payload's JSON text. */
  readonly payloadLength: number;
}

/** The first jobs of one topic in one state. */
export interface ListedJobs {
  /** The topic listed. */
  readonly topic: string;
  /** The state listed. */
  readonly state: ListedJobState;
  /** The Redis server's clock at the read (epoch ms). */
  readonly now: number;
  /** Jobs in that state, of which `jobs` are the first `limit`. */
  readonly total: number;
  /** The first `limit` jobs in that state. */
  readonly jobs: ListedJob[];
}

/** The order `listJobsScript` returns each state in, to merge the shards of a sharded topic the same way. */
export const LIST_ORDER: Record<ListedJobState, (a: ListedJob, b: ListedJob) => number> = {
  due: (a, b) => a.dueAt! - b.dueAt!,
  scheduled: (a, b) => a.dueAt! - b.dueAt!,
  'waiting-group': (a, b) => a.dueAt! - b.dueAt!,
  active: (a, b) => a.visibleUntil! - b.visibleUntil!,
  dead: (a, b) => b.diedAt! - a.diedAt!,
  completed: (a, b) => b.finishedAt! - a.finishedAt!,
};

/**
 * A listed job from what `listJobsScript` returns for it: the body's header (null when this library
 * did not write the body), the first bytes of the payload (of the raw body when unreadable) and the
 * payload's whole size in bytes.
 */
export function toListedJob(row: ListedRow, state: ListedJobState, previewLength: number): ListedJob {
  const { payloadHead: head, payloadBytes: bytes } = row;
  let job: {
    attempts: number;
    maxAttempts?: number;
    createdAt: number;
    lastError?: string;
    progress?: unknown;
    priority?: number;
    dedupe?: string;
  };
  try {
    if (row.header === null) throw new Error(`Unreadable job body (written by hand or by an incompatible version): ${head.slice(0, 120)}`);
    job = decodeHeader(row.header);
  } catch (error) {
    job = { attempts: 0, createdAt: 0, lastError: errorMessage(error) };
  }
  const times =
    state === 'due' || state === 'scheduled' || state === 'waiting-group'
      ? { dueAt: Math.floor(Number(row.score) / DUE_SCORE_SLOTS) }
      : state === 'active'
        ? { visibleUntil: Number(row.score) }
        : state === 'dead'
          ? { diedAt: Number(row.score) }
          : { finishedAt: Number(row.score) };
  return {
    id: row.id,
    state,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    createdAt: job.createdAt,
    ...times,
    lastError: job.lastError,
    ...(job.progress === undefined ? {} : { progress: job.progress }),
    ...(job.priority === undefined ? {} : { priority: job.priority }),
    ...dedupeOf(job.dedupe),
    payloadPreview: previewOf(head, bytes, previewLength),
    payloadLength: bytes,
  };
}

/** `{ dedupe }` of a job listed or shown (`dedupe`: the stored form, dedupe-spec.ts), or nothing. */
export function dedupeOf(stored: string | undefined): { readonly dedupe?: Required<DedupeOptions> } {
  const dedupe = stored === undefined ? undefined : decodeDedupe(stored);
  return dedupe === undefined ? {} : { dedupe };
}

/**
 * The first `length` characters of the payload and '…' when there is more. `head` holds at least
 * that many whole characters whenever the payload is longer (see `listJobs`), so a character cut by
 * the byte limit never shows.
 */
function previewOf(head: string, bytes: number, length: number): string {
  const whole = Buffer.byteLength(head) === bytes;
  if (whole && head.length <= length) return head;
  let preview = head.slice(0, length);
  if (/[\uD800-\uDBFF]$/.test(preview)) preview = preview.slice(0, -1); // half of a surrogate pair
  return `${preview}…`;
}
