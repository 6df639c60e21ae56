import { JobScript } from './job-script.js';
import { LUA_READ_JOB } from './read-job-lua-snippet.js';

/** A job and where it is, as read-job answers it (raw: the inspector turns it into a `DelayedJob`). */
export interface JobRead {
  /** The server's now, in ms. */
  readonly nowMs: number;
  /** The stored body; null when there is no job of that id. */
  readonly body: string | null;
  /** Its due score (also that of a job waiting in its group's queue), a string: due scores have 16 digits. */
  readonly dueScore: string | null;
  /** The job waits in its group's queue for its group's turn (state 'waiting-group'). */
  readonly inGroupQueue: boolean;
  /** Its visibility deadline (ms) while claimed. */
  readonly visibleUntilMs: number | null;
  /** When it died (ms), for a dead letter. */
  readonly diedAtMs: number | null;
  /** When it completed (ms), for a kept completed job. */
  readonly finishedAtMs: number | null;
  /** The kept completed job's result, as JSON; null when it returned none. */
  readonly resultJson: string | null;
}

/**
 * Reads one job and where it is, in one consistent snapshot. Read-only.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the completed zset and the results
 * hash (see complete-job-lua-snippet.ts); the job's id.
 *
 * Returns readJobState's snapshot (read-job-lua-snippet.ts), decoded into a JobRead.
 */
export const readJobScript = new JobScript(
  'readJob',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'completed', 'results'],
    args: { id: 'text' },
    decode: decodeJobRead,
  },
  `
return readJobState(ARG.id)
`,
  [LUA_READ_JOB],
);

/** The reply of readJobState (read-job-lua-snippet.ts) as a JobRead. */
export function decodeJobRead(reply: unknown): JobRead {
  const [nowMs, body, dueScore, deadline, diedAt, finishedAt, result, inGroupQueue] = reply as (string | number | null)[];
  const msOrNull = (value: string | number | null | undefined) => (value == null ? null : Number(value));
  const textOrNull = (value: string | number | null | undefined) => (value == null ? null : String(value));
  return {
    nowMs: Number(nowMs),
    body: textOrNull(body),
    dueScore: textOrNull(dueScore),
    inGroupQueue: Number(inGroupQueue) === 1,
    visibleUntilMs: msOrNull(deadline),
    diedAtMs: msOrNull(diedAt),
    finishedAtMs: msOrNull(finishedAt),
    resultJson: textOrNull(result),
  };
}
