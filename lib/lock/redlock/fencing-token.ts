/** One master that granted the lock, and the value of its per-key fencing counter after the grant. */
export interface FenceVote {
  readonly master: number;
  readonly fence: bigint;
}

/** The token of a won vote, and which granting masters must be raised to it before it is handed out. */
interface FencingPlan {
  readonly token: bigint;
  /** Granting masters whose counter is already at the token. */
  readonly atToken: number;
  /** Granting masters below the token: raise enough of them that `atToken + raised >= quorum`. */
  readonly behind: readonly number[];
}

/**
 * Fencing tokens in Redlock mode: strictly increasing across holders, with no designated master.
 *
 * Every master keeps its own counter per key (`rl:lock:{name}:fence`, with the bounded TTL of every
 * fence, see LUA_FENCE). The acquire script sets it to max(counter + 1, the master's clock in whole
 * seconds, as µs) on every fresh grant ('counter' mode): within a second the masters' counters step
 * by one together, and a new second moves them all to the same floor, so a try costs no extra round
 * trip. The token is the highest counter among the masters that granted.
 *
 * Invariant: when a token T is handed out, a majority of masters hold a counter >= T.
 * - It holds after the grant if at least `quorum` granting masters are at T (common while the
 *   counters move together; split votes and late grants move them apart). Otherwise the lagging granting
 *   masters are raised to T (`raiseFence`, SET if greater) before T is handed out; if too few can
 *   be raised in time, the try fails like any other.
 * - Why it gives strictly increasing tokens: the next holder's granting majority shares at least
 *   one master with the majority that holds >= T; counters never go down, so that master's grant
 *   increments to >= T + 1, and the next token, a maximum over a set including it, is > T.
 * - Re-entry reads instead of incrementing and returns the holder's own token, which the process
 *   that won it remembers (HolderTokens): the masters' counters are not level enough to say it.
 * - Counters only move up: a failed try's increment stays (a token nobody was given); handing its
 *   grant back never lowers a counter. Lowering one is unsafe: a hand-back can arrive after a
 *   later grant on that master already used the value.
 *
 * Counters lost or rolled back: a minority of masters losing them changes nothing (the invariant
 * above: a majority still holds >= T). A majority losing them (restarts without persistence, AOF
 * `everysec` losing its last second) restarts them at the clock floor, above every token of an
 * earlier second. Assumption: the masters' clocks do not go back and differ by less than the time
 * between the lost grants and the next one (a restart alone takes longer than a second); AOF with
 * `appendfsync always` makes it moot. Redlock's own exclusion needs the same care (AOF, or a
 * restart delayed past the lease).
 *
 * Why not one designated counter master (INCR there, quorum max only when it is down): its tokens
 * are known to that master alone, so after it goes down the quorum max can fall far below tokens it
 * already handed out (m1 counts 1..100 while m2 and m3 stay at 0; m1 dies; max + 1 = 1). Keeping
 * the invariant would need every designated token written to a majority, a second round trip on
 * every acquire. This scheme needs that extra trip only after the counters diverged.
 */
export function planFencingToken(grants: readonly FenceVote[], quorum: number): FencingPlan {
  let token = 0n;
  for (const grant of grants) if (grant.fence > token) token = grant.fence;
  let atToken = 0;
  const behind: number[] = [];
  for (const grant of grants) {
    if (grant.fence >= token) atToken++;
    else behind.push(grant.master);
  }
  return { token, atToken, behind: atToken >= quorum ? [] : behind };
}
