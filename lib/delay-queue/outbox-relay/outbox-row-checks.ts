import { errorMessage } from '../../core/errors/error-message.js';
import { assertValidTopic } from '../../core/keys/topic-name.js';
import type { OutboxRow } from '../../core/outbox-port/job-outbox-store.js';
import { outboxRowKindOf } from '../../core/outbox-port/outbox-row-kind.js';
import { MAX_JOB_ID_BYTES } from '../jobs/delay-queue.constants.js';
import { bodyOfTail, decodeJob } from '../jobs/job-codec.js';
import { readStoredForm } from '../repeat/repeat-definition.js';

/**
 * A row as a store claimed it, read for writing: its kind as a word (a store that keeps the kind as
 * an opaque string may return a storage code), or the reason it can never be written.
 */
export function readClaimedRow(row: OutboxRow): { readonly row: OutboxRow } | { readonly problem: string } {
  try {
    assertValidTopic(row.topic);
  } catch (error) {
    return { problem: `its topic cannot be used: ${errorMessage(error)}` };
  }
  if (typeof row.jobId !== 'string' || row.jobId.length === 0 || Buffer.byteLength(row.jobId, 'utf8') > MAX_JOB_ID_BYTES) {
    return { problem: `its job id ${JSON.stringify(row.jobId)} is empty or too long` };
  }
  const kind = outboxRowKindOf(row.kind);
  // A delay is what is left of it at the claim: negative once the row is overdue (it keeps its due time).
  if (!kind || typeof row.when !== 'number' || !Number.isFinite(row.when) || (row.when < 0 && kind !== 'delay')) {
    return { problem: `its due time (kind ${JSON.stringify(row.kind)}, when ${JSON.stringify(row.when)}) cannot be read` };
  }
  const read = { row: kind === row.kind ? row : { ...row, kind } };
  if (kind === 'removeRepeat') return read;
  if (kind === 'repeat') {
    return readStoredForm(row.jobId, row.body)
      ? read
      : { problem: 'its repeat schedule definition cannot be read (written by hand or by an incompatible version)' };
  }
  try {
    decodeJob(bodyOfTail(row.body, 0));
  } catch {
    return { problem: 'its job body cannot be decoded (written by hand or by an incompatible version)' };
  }
  return read;
}

/** Reply errors that say "not now" rather than "never": the server is loading, busy, failing over or full. */
const TRANSIENT_REPLY = /^(LOADING|BUSY|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY|OOM|MISCONF)/;
/** How deep the cause chain of a failure is searched for the server's reply. */
const MAX_CAUSE_DEPTH = 5;

/**
 * A reply error (Redis answered and refused the write), as opposed to a connection that failed: the
 * server's `ReplyError` anywhere in the cause chain (the script runner wraps it in RedisCommandError),
 * unless its code is a transient one.
 */
export function isRefusal(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < MAX_CAUSE_DEPTH; depth++, current = current.cause) {
    if (current.name === 'ReplyError') return !TRANSIENT_REPLY.test(current.message);
  }
  return false;
}
