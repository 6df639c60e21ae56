import type { LockHandle } from '../../lib/index.js';

/**
 * How a grant relates to the holds before it:
 * - `fresh`: a hold that starts (a plain, fair or write lock taken, a multi-key part, a semaphore
 *   permit, a read that may start a read phase): its token must be above every token of the key
 *   handed out before it was asked for;
 * - `joined`: a reader that may have joined a read phase already held, or a re-entry into the
 *   caller's own hold: it may share that hold's token, so it must only not be below any token
 *   handed out before it was asked for.
 */
export type GrantKind = 'fresh' | 'joined';

/** One token handed out for one key, with when it was asked for and when it arrived (monotonic ms). */
export interface FenceGrant {
  readonly key: string;
  readonly token: bigint;
  readonly kind: GrantKind;
  readonly askedAt: number;
  readonly grantedAt: number;
  /** Who took it and how, for the violation report. */
  readonly label: string;
  /** The fault phase the grant arrived in, for the report. */
  readonly phase: string;
}

/** The largest token a fencing column holds exactly in Lua (and far inside a signed 64-bit column). */
const MAX_EXACT_TOKEN = 2n ** 53n;

/**
 * Records every fencing token handed out, per key, with the order of grants (real time: a grant that
 * arrived before another was asked for comes first), and checks the history:
 * - `went-back`: a fresh grant's token is not above every token of its key granted before it was
 *   asked for, or a joined grant's token is below one;
 * - `repeated`: two fresh grants of one key got the same token (also when they overlapped in time);
 * - `malformed`: a token that is not a positive decimal integer below 2^53.
 */
export class FenceHistory {
  readonly grants: FenceGrant[] = [];
  private readonly malformed: string[] = [];
  phase = 'start';

  /** Runs `take`, and records the token(s) of the handle it resolves with (each part of a multi-key lock). */
  async take<T extends LockHandle | null>(label: string, kind: GrantKind, take: () => Promise<T>): Promise<T> {
    const askedAt = performance.now();
    const handle = await take();
    const grantedAt = performance.now();
    if (handle) {
      const parts: readonly LockHandle[] = 'parts' in handle ? (handle.parts as LockHandle[]) : [handle];
      for (const part of parts) this.record(part.key, part.fencingToken, kind, askedAt, grantedAt, label);
    }
    return handle;
  }

  record(key: string, text: string, kind: GrantKind, askedAt: number, grantedAt: number, label: string): void {
    if (!/^[1-9][0-9]*$/.test(text) || BigInt(text) >= MAX_EXACT_TOKEN) {
      this.malformed.push(`${key}: ${label} got ${JSON.stringify(text)}`);
      return;
    }
    this.grants.push({ key, token: BigInt(text), kind, askedAt, grantedAt, label, phase: this.phase });
  }

  /** Grants per phase (the phase each arrived in). */
  countByPhase(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const grant of this.grants) counts[grant.phase] = (counts[grant.phase] ?? 0) + 1;
    return counts;
  }

  /** Every violation found, as a line each (empty when the history is correct). */
  violations(): string[] {
    const found = this.malformed.map((line) => `malformed: ${line}`);
    const byKey = new Map<string, FenceGrant[]>();
    for (const grant of this.grants) {
      const list = byKey.get(grant.key) ?? [];
      list.push(grant);
      byKey.set(grant.key, list);
    }
    for (const [key, grants] of byKey) {
      found.push(...checkKey(key, grants));
    }
    return found;
  }
}

function checkKey(key: string, grants: FenceGrant[]): string[] {
  const found: string[] = [];
  const byArrival = [...grants].sort((a, b) => a.grantedAt - b.grantedAt);
  const byAsk = [...grants].sort((a, b) => a.askedAt - b.askedAt);
  // Sweep the grants in the order they were asked for, folding in every grant that arrived before.
  let arrived = 0;
  let highest: FenceGrant | undefined;
  for (const grant of byAsk) {
    while (arrived < byArrival.length && byArrival[arrived].grantedAt < grant.askedAt) {
      const earlier = byArrival[arrived++];
      if (!highest || earlier.token > highest.token) highest = earlier;
    }
    if (!highest) continue;
    const wentBack = grant.kind === 'fresh' ? grant.token <= highest.token : grant.token < highest.token;
    if (wentBack) {
      found.push(
        `went-back: ${key}: ${grant.label} (${grant.kind}, ${grant.phase}) got ${grant.token}, ` +
          `but ${highest.label} (${highest.phase}) had been granted ${highest.token} before it asked`,
      );
    }
  }
  const fresh = new Map<bigint, FenceGrant>();
  for (const grant of grants) {
    if (grant.kind !== 'fresh') continue;
    const other = fresh.get(grant.token);
    if (other) found.push(`repeated: ${key}: ${other.label} (${other.phase}) and ${grant.label} (${grant.phase}) both got ${grant.token}`);
    else fresh.set(grant.token, grant);
  }
  return found;
}

/**
 * A small seeded generator (mulberry32) for randomized specs: a failing run names its seed, and the
 * same seed draws the same operations again (their timing, under faults, still varies).
 */
export { seededRandom } from '../../tools/soak/soak-constants.js';
