/**
 * A waited job's outcome as announced on its shard's outcome channel (announceOutcome,
 * scripts/lua-snippets.ts): `<kind><id length in bytes>:<id><detail>`, kind `c` completed (detail:
 * its result JSON, empty when none is kept), `d` dead (its failure as stored, see
 * job-codec.ts: encodeFailure), `x` cancelled.
 */
export interface OutcomeNotice {
  readonly kind: 'completed' | 'dead' | 'cancelled';
  readonly id: string;
  readonly detail: string;
}

const KINDS = { c: 'completed', d: 'dead', x: 'cancelled' } as const;

/** The notice in `message`, or undefined for a message of another shape. */
export function parseOutcomeNotice(message: string | Buffer): OutcomeNotice | undefined {
  const bytes = typeof message === 'string' ? Buffer.from(message) : message;
  const kind = KINDS[String.fromCharCode(bytes[0]) as keyof typeof KINDS];
  const colon = bytes.indexOf(0x3a);
  if (kind === undefined || colon < 2) return undefined;
  const digits = bytes.subarray(1, colon).toString();
  const length = Number(digits);
  if (!/^\d+$/.test(digits) || length === 0 || colon + 1 + length > bytes.length) return undefined;
  const id = bytes.subarray(colon + 1, colon + 1 + length).toString();
  return { kind, id, detail: bytes.subarray(colon + 1 + length).toString() };
}
