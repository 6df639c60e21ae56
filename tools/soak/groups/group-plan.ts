/**
 * The seeded plan of the group checker's jobs: groups of random sizes whose jobs are scheduled in
 * waves, each job with an absolute due time (`at`, epoch ms: Redis runs on this machine's clock),
 * random work, and a behaviour (succeed, fail once, always fail with `maxAttempts` 2).
 *
 * Within a group the due times never go back from one job to the next (across waves too), and a
 * third of the jobs take the same due time as the job before them: so a group's due order, equal
 * due times in schedule order, is the order the jobs are planned in, and `seq` numbers it.
 */
import type { ScheduledJob } from '../../../lib/delay-queue/interfaces/schedule-options.interface.js';
import type { WorkerJobPayload } from './worker.js';

export interface PlannedJob {
  readonly id: string;
  readonly group: string;
  readonly seq: number;
  /** Due time relative to its wave's base, ms. */
  readonly offset: number;
  readonly workMs: number;
  readonly fail?: 'once' | 'always';
}

/**
 * `groups` groups of 1..maxSize jobs spread over `waves` waves (the jobs of a wave in a random
 * interleaving of the groups that keeps each group's order), due up to `spreadMs` after the wave starts.
 */
export function planGroupJobs(
  random: () => number,
  options: { groups: number; maxSize: number; waves: number; spreadMs: number; prefix: string },
): PlannedJob[][] {
  const waves: PlannedJob[][] = Array.from({ length: options.waves }, () => []);
  for (let g = 0; g < options.groups; g++) {
    const group = `${options.prefix}${g}`;
    const size = 1 + Math.floor(random() * options.maxSize);
    let wave = 0;
    let lastOffset = 0;
    for (let seq = 0; seq < size; seq++) {
      // A group's jobs move on to later waves, never back.
      if (seq > 0 && random() < 0.3 && wave < options.waves - 1) {
        wave++;
        lastOffset = 0;
      }
      const sameDue = seq > 0 && random() < 0.33;
      const offset = sameDue ? lastOffset : Math.max(lastOffset, Math.round((random() * options.spreadMs) / 50) * 50);
      lastOffset = offset;
      const draw = random();
      const fail = draw < 0.06 ? 'always' : draw < 0.18 ? 'once' : undefined;
      waves[wave].push({ id: `${group}.${seq}`, group, seq, offset, workMs: 5 + Math.floor(random() * 40), ...(fail ? { fail } : {}) });
    }
  }
  return waves.map((jobs) => interleave(random, jobs));
}

/** The wave's jobs as `scheduleMany` entries, due at `base` + their offset (the group's due times never go back). */
export function toScheduledJobs(
  jobs: readonly PlannedJob[],
  base: number,
  lastAt: Map<string, number>,
): Array<ScheduledJob<WorkerJobPayload>> {
  return jobs.map((job) => {
    const at = Math.max(base + job.offset, lastAt.get(job.group) ?? 0);
    lastAt.set(job.group, at);
    const always = job.fail === 'always' ? { maxAttempts: 2, backoff: { delay: 50 } } : {};
    return { id: job.id, group: job.group, at, payload: { workMs: job.workMs, ...(job.fail ? { fail: job.fail } : {}) }, ...always };
  });
}

/** A random merge of the groups' job lists, each group's jobs kept in their order. */
function interleave(random: () => number, jobs: readonly PlannedJob[]): PlannedJob[] {
  const queues = new Map<string, PlannedJob[]>();
  for (const job of jobs) queues.set(job.group, [...(queues.get(job.group) ?? []), job]);
  const out: PlannedJob[] = [];
  while (queues.size > 0) {
    const groups = [...queues.keys()];
    const group = groups[Math.floor(random() * groups.length)];
    const queue = queues.get(group)!;
    out.push(queue.shift()!);
    if (queue.length === 0) queues.delete(group);
  }
  return out;
}
