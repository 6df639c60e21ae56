/**
 * What an outbox row carries, named after the call that made it. Jobs: `'delay'` (`when` is a delay
 * in ms) and `'at'` (`when` is an absolute due time in epoch ms). Repeat schedule changes made inside
 * a transaction: `'repeat'` upserts the schedule `jobId` of `topic`, `body` being its stored
 * definition; `'removeRepeat'` removes the schedule `jobId` (`body` empty). A schedule change has
 * `when` 0: it is applied as soon as it is relayed.
 */
export type OutboxRowKind = 'delay' | 'at' | 'repeat' | 'removeRepeat';

/**
 * The one-letter code of each kind, as stored in an outbox table's `kind` column and passed to the
 * Redis scripts. Fixed: stored rows are read with them.
 */
const CODES: Readonly<Record<OutboxRowKind, string>> = { delay: 'd', at: 'a', repeat: 'r', removeRepeat: 'x' };
const KINDS: ReadonlyMap<string, OutboxRowKind> = new Map(
  Object.entries(CODES).flatMap(([kind, code]) => [
    [code, kind as OutboxRowKind],
    [kind, kind as OutboxRowKind],
  ]),
);

/** The storage code of a kind (`'d'`, `'a'`, `'r'`, `'x'`), for a table column or a script argument. */
export function outboxRowKindCode(kind: OutboxRowKind): string {
  return CODES[kind];
}

/**
 * The kind a stored value names: a storage code, or the kind's word (a store that keeps the kind as
 * an opaque string may hold either). Undefined when it names none.
 */
export function outboxRowKindOf(stored: unknown): OutboxRowKind | undefined {
  return typeof stored === 'string' ? KINDS.get(stored) : undefined;
}
