import type { AttemptOutcome, AttemptRefusal } from './lock-protocol.interface.js';

/** The refusals that carry no wait: one object each, shared by every refused try. */
const HELD_WITHOUT_LEASE: AttemptRefusal = { acquired: false, reason: 'held-without-lease' };
const VANISHED: AttemptRefusal = { acquired: false, reason: 'vanished' };
const SECTION_LOST: AttemptRefusal = { acquired: false, reason: 'section-lost' };

/** A refused try's `value` in an acquire script's reply `{0, value}` that is no wait in ms. */
export const SECTION_LOST_REPLY = -3;

/**
 * The one reader of an acquire script's `{0, value}` reply (every kind's acquire script answers a
 * refusal so): `value` is the PTTL of the held key, or for kinds with their own deadlines the ms
 * until the nearest one ends. PTTL's -1 (no expiry) and -2 (no key) and the scripts' -3
 * (SECTION_LOST_REPLY) become named reasons here.
 */
export function refusal(value: number): AttemptRefusal {
  if (value >= 0) return { acquired: false, reason: 'held', waitMs: value };
  if (value === -1) return HELD_WITHOUT_LEASE;
  return value === SECTION_LOST_REPLY ? SECTION_LOST : VANISHED;
}

/** An acquire script's `{1, fencingToken}` or `{0, value}` reply as an outcome (other codes are the caller's). */
export function attemptOutcome(granted: number, value: string | number): AttemptOutcome {
  return granted === 1 ? { acquired: true, fencingToken: String(value) } : refusal(Number(value));
}
