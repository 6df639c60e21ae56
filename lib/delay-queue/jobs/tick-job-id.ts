/**
 * The id of the job of one tick of a repeatable schedule: `repeat:<scheduleId>@<tick epoch ms>`.
 * Derived from the schedule and the tick alone, so every instance names a tick's job the same way;
 * the scripts build the same string (see scripts/repeat-lua-snippets.ts).
 */
export function tickJobId(scheduleId: string, tickMs: number): string {
  return `repeat:${scheduleId}@${tickMs}`;
}

const TICK_JOB_ID = /^repeat:(.+)@(\d+)$/s;

/** The schedule id and tick of a tick job's id; undefined for any other job id. */
export function parseTickJobId(id: string): { readonly scheduleId: string; readonly tickMs: number } | undefined {
  const match = TICK_JOB_ID.exec(id);
  return match ? { scheduleId: match[1], tickMs: Number(match[2]) } : undefined;
}
