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
 * dead, marker. The whole list of the scripts that take nothing else.
 */
export function topicScriptKeys(keys: TopicKeys): string[] {
  return [keys.due, keys.jobs, keys.active, keys.dead, keys.marker];
}

/**
 * The topic keys and KEYS[6], the call's operation record `operationId` (see operation-record.ts):
 * schedule (with a write id), the outbox's fenced job write, cancel, reschedule, retry and delete
 * of dead letters, cancel of a waiting job.
 */
export function recordedScriptKeys(keys: TopicKeys, operationId: string): string[] {
  return [...topicScriptKeys(keys), operationKey(keys.jobs, operationId)];
}

/**
 * The cancel's KEYS (see scripts/cancel-job.lua.ts): the topic keys, the call's operation record
 * (KEYS[6]), the shard's cancel tombstones (KEYS[7]) and its cancel channel (KEYS[8], a key so that
 * a cluster routes the SPUBLISH by its hash tag).
 */
export function cancelScriptKeys(keys: TopicKeys, operationId: string): string[] {
  return [...recordedScriptKeys(keys, operationId), keys.cancelled, keys.cancelChannel];
}

/**
 * The visibility extension's KEYS (see scripts/extend-jobs.lua.ts): the topic keys, KEYS[6] unused,
 * the shard's cancel tombstones (KEYS[7]).
 */
export function extendScriptKeys(keys: TopicKeys): string[] {
  return [...recordedScriptKeys(keys, UNUSED_RECORD), keys.cancelled];
}

/** The operation id of KEYS[6] for the scripts that take the slot but write no record. */
const UNUSED_RECORD = 'unused';
