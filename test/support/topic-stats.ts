import type { DelayQueueStats } from '../../lib/index.js';

/** A topic's whole `stats()`: nothing waiting, running or dead, not paused, but for what `counts` says. */
export function topicStats(counts: Partial<DelayQueueStats> = {}): DelayQueueStats {
  return { scheduled: 0, due: 0, active: 0, dead: 0, schedules: 0, paused: false, grouped: 0, busyGroups: 0, readyGroups: 0, ...counts };
}
