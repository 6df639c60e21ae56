import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import { operationKey } from './operation-record.js';

/**
 * The KEYS list of every delay-queue script, in the order the script reads them, built from one
 * topic shard's keys (`RedisKeySpace.topic`): every call site takes its list from here. All keys
 * derive from the shard's own, so they share its hash tag and cluster slot. Core's key space names
 * the keys; which script takes which of them, in which order, is the delay queue's contract.
 */

/**
 * The five topic keys every script opens with (see scripts/lua-snippets.ts): due, jobs, active,
 * dead, marker. The whole list of the scripts that take nothing else (ack without kept completed
 * jobs, fail, release, set progress, read dead letters, count jobs without schedules).
 */
export function topicScriptKeys(keys: TopicKeys): string[] {
  return [keys.due, keys.jobs, keys.active, keys.dead, keys.marker];
}

/**
 * The topic keys and KEYS[6], the call's operation record `operationId` (see operation-record.ts):
 * the opening of the repeat scripts' and the counts' KEYS.
 */
export function recordedScriptKeys(keys: TopicKeys, operationId: string): string[] {
  return [...topicScriptKeys(keys), operationKey(keys.jobs, operationId)];
}

/** The reads of completed jobs' KEYS (read-job, list-jobs): the topic keys, the completed zset, the results hash. */
export function completedReadScriptKeys(keys: TopicKeys): string[] {
  return [...topicScriptKeys(keys), keys.completed, keys.results];
}

/**
 * The repeat scripts' KEYS (see scripts/repeat-lua-snippets.ts): the topic keys, an operation record
 * (`operationId`, unused by the scripts that write none), the schedules hash, the next-tick,
 * last-run, removal and definition-time zsets, and the runs hash.
 */
export function repeatScriptKeys(keys: TopicKeys, operationId = UNUSED_RECORD): string[] {
  const base = repeatBase(keys);
  return [
    ...recordedScriptKeys(keys, operationId),
    `${base}:repeats`,
    `${base}:repeat-next`,
    `${base}:repeat-last`,
    `${base}:repeat-removed`,
    `${base}:repeat-defined`,
    `${base}:repeat-runs`,
  ];
}

/**
 * The counts' KEYS (see scripts/topic-stats.lua.ts): the topic keys, KEYS[6] unused, the schedules
 * hash, the completed zset, the pause flag.
 */
export function topicStatsScriptKeys(keys: TopicKeys): string[] {
  return [...recordedScriptKeys(keys, UNUSED_RECORD), `${repeatBase(keys)}:repeats`, keys.completed, keys.paused];
}

/** The operation id of KEYS[6] for the scripts that take the slot but write no record. */
const UNUSED_RECORD = 'unused';

/** The part the repeat keys of a shard share: its jobs key without `:jobs`. */
function repeatBase(keys: TopicKeys): string {
  return keys.jobs.slice(0, -':jobs'.length);
}
