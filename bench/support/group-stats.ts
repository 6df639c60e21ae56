import type { RunRecord } from './consumer-protocol.js';
import { distribution, type Distribution } from './delay-stats.js';

/** Whether the runs kept each group's jobs one at a time and in sequence. */
export interface Ordering {
  /** Handler runs seen (a job run twice counts twice). */
  readonly runs: number;
  /** Jobs that ran more than once (extra runs), and jobs that never ran. */
  readonly duplicates: number;
  readonly missing: number;
  /** Runs that started after a later job of their group had already started. */
  readonly outOfOrder: number;
  /** Pairs of runs of one group that were running at the same time. */
  readonly overlappingPairs: number;
  /** Groups with at least one out-of-order start or overlap. */
  readonly groupsAffected: number;
}

/** Records by group, each group's runs by start time. */
function byGroup(records: readonly RunRecord[]): Map<number, RunRecord[]> {
  const groups = new Map<number, RunRecord[]>();
  for (const record of records) {
    const runs = groups.get(record[0]) ?? [];
    runs.push(record);
    groups.set(record[0], runs);
  }
  for (const runs of groups.values()) runs.sort((a, b) => a[2] - b[2]);
  return groups;
}

export function ordering(records: readonly RunRecord[], groups: number, jobsPerGroup: number): Ordering {
  const seen = new Set<number>();
  let duplicates = 0;
  for (const [g, s] of records) {
    const id = g * jobsPerGroup + s;
    if (seen.has(id)) duplicates++;
    seen.add(id);
  }
  let outOfOrder = 0;
  let overlappingPairs = 0;
  let groupsAffected = 0;
  for (const runs of byGroup(records).values()) {
    let highest = -1;
    let affected = false;
    for (let i = 0; i < runs.length; i++) {
      const [, s, start] = runs[i];
      if (s < highest) {
        outOfOrder++;
        affected = true;
      }
      highest = Math.max(highest, s);
      // Every earlier-started run still running when this one started overlaps it.
      for (let j = 0; j < i; j++) {
        if (runs[j][3] > start) {
          overlappingPairs++;
          affected = true;
        }
      }
    }
    if (affected) groupsAffected++;
  }
  return { runs: records.length, duplicates, missing: groups * jobsPerGroup - seen.size, outOfOrder, overlappingPairs, groupsAffected };
}

/** How evenly the groups were served. */
export interface Fairness {
  /** Per group: ms from the origin to its first start. */
  readonly firstStartMs: Distribution;
  /** Jain's index (1 = every group equally far, 1/n = one group only) of jobs finished per group at 25% and 50% of the run. */
  readonly jainAt25: number;
  readonly jainAt50: number;
}

/** Jain's fairness index: (Σx)² / (n·Σx²). */
export function jain(values: readonly number[]): number {
  const sum = values.reduce((n, v) => n + v, 0);
  const squares = values.reduce((n, v) => n + v * v, 0);
  return squares === 0 ? Number.NaN : (sum * sum) / (values.length * squares);
}

/** `originUs`: when the run began (consumers told to go); the run ends at the last handler's end. */
export function fairness(records: readonly RunRecord[], groups: number, originUs: number): Fairness {
  const endUs = records.reduce((n, r) => Math.max(n, r[3]), originUs);
  const finishedBy = (atUs: number) => {
    const perGroup = new Array<number>(groups).fill(0);
    for (const [g, , , end] of records) if (end <= atUs) perGroup[g]++;
    return jain(perGroup);
  };
  const firsts = [...byGroup(records).values()].map((runs) => (runs[0][2] - originUs) / 1000);
  return {
    firstStartMs: distribution(firsts),
    jainAt25: finishedBy(originUs + (endUs - originUs) * 0.25),
    jainAt50: finishedBy(originUs + (endUs - originUs) * 0.5),
  };
}
