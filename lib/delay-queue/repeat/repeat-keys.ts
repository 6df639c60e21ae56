import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import { operationKey } from '../jobs/operation-record.js';

/**
 * The script keys of the repeat scripts for one topic shard (see scripts/repeat-lua-snippets.ts):
 * the five topic keys, an operation record, the schedules hash, the next-tick, last-run and removal
 * zsets. All derive from the shard's own keys, so they share its hash tag and cluster slot.
 */
export function repeatScriptKeys(keys: TopicKeys, operationId = 'unused'): string[] {
  const base = keys.jobs.slice(0, -':jobs'.length);
  return [
    keys.due,
    keys.jobs,
    keys.active,
    keys.dead,
    keys.marker,
    operationKey(keys.jobs, operationId),
    `${base}:repeats`,
    `${base}:repeat-next`,
    `${base}:repeat-last`,
    `${base}:repeat-removed`,
  ];
}

