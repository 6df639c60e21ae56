/** The share of GLIDE's in-flight limit our requests may take: its core frees a slot a little after the reply reaches us. */
const SHARE = 0.9;
/** First and last pause before a request GLIDE refused for its in-flight limit is sent again (ms). */
const REFUSED_FIRST_PAUSE_MS = 1;
const REFUSED_MAX_PAUSE_MS = 32;

/**
 * At most 90 % of a GLIDE client's in-flight limit of our requests in flight on it; the others
 * wait their turn, in order. GLIDE refuses a request beyond its `inflightRequestsLimit` (default
 * 1000) at once with "Reached maximum inflight requests", where ioredis would queue it: a burst of
 * lock calls, or the testing kit's removal of a thousand keys, must wait instead. A freed slot
 * passes straight to the next waiter. The margin covers GLIDE's core counting a request a little
 * longer than we do, and the user's own requests on their client; a refusal that still happens is
 * retried (`runAdmitted`).
 */
export class InflightGate {
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  private drained: (() => void) | undefined;

  private readonly limit: number;

  /** `glideLimit`: the client's `inflightRequestsLimit`. */
  constructor(glideLimit: number) {
    this.limit = Math.max(1, Math.floor(glideLimit * SHARE));
  }

  /** Requests holding a slot now. */
  get size(): number {
    return this.inFlight;
  }

  /** Resolves once the caller holds a slot (at once while fewer than `limit` are in flight). */
  enter(): Promise<void> | undefined {
    if (this.inFlight < this.limit) {
      this.inFlight++;
      return undefined;
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Frees the caller's slot, for the next waiter if any. */
  leave(): void {
    const next = this.waiting.shift();
    if (next) return next();
    this.inFlight--;
    if (this.inFlight === 0) this.drained?.();
  }

  /** Resolves once nothing is in flight. */
  whenIdle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => (this.drained = resolve));
  }
}

/** GLIDE's refusal of a request over its in-flight limit: the request was never sent. */
function isInflightRefusal(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('Reached maximum inflight requests');
}

/**
 * `send` through `gate`; sent again, after a pause doubling from 1 ms to 32 ms, while GLIDE refuses
 * it for its in-flight limit (it never reached Redis, so sending it again is safe), until
 * `giveUpAt` (monotonic ms), when the refusal is the error.
 */
export async function runAdmitted<T>(gate: InflightGate, send: () => Promise<T>, giveUpAt: number): Promise<T> {
  const turn = gate.enter();
  if (turn) await turn;
  try {
    for (let pause = REFUSED_FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, REFUSED_MAX_PAUSE_MS)) {
      try {
        return await send();
      } catch (error) {
        if (!isInflightRefusal(error) || performance.now() + pause > giveUpAt) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  } finally {
    gate.leave();
  }
}
