/**
 * A job library under test in the multi-process job benches (groups, rate limit). Each contender has
 * two halves: the producer runs in the bench process, the consumers each in a worker process of their
 * own (bench/support/consumer-process.ts), all on one Redis.
 */

/** One job: its group number `g` and its sequence `s` within the group (the order it must run in). */
export interface BenchJob {
  readonly g: number;
  readonly s: number;
}

/** What a consumer is started with. */
export interface ConsumerPlan {
  /** Handlers running at once in one process. */
  readonly concurrency: number;
  /** A start limit for the whole topic across processes, when the bench measures one. */
  readonly rateLimit?: { readonly max: number; readonly duration: number };
}

export interface BenchProducer {
  /** Writes the jobs, in array order, due now. */
  enqueue(jobs: readonly BenchJob[]): Promise<void>;
  close(): Promise<void>;
}

export interface BenchConsumer {
  /** Starts consuming: nothing is claimed before. */
  start(): void;
  /** Library-specific counts worth reporting (e.g. how often the workaround put a job back). */
  counters(): Record<string, number>;
  close(): Promise<void>;
}

export interface JobContender {
  /** The name BENCH_ONLY selects it by. */
  readonly key: string;
  readonly name: string;
  readonly settings: string;
  /** In the bench process. `grouped`: every job carries its group `g${job.g}`. */
  openProducer(url: string, namespace: string, grouped: boolean): Promise<BenchProducer>;
  /** In a worker process: connected and ready, not consuming until `start()`. */
  /** `admittedMs`: when the contender's own limiter counted this start (epoch ms), where it says. */
  openConsumer(
    url: string,
    namespace: string,
    plan: ConsumerPlan,
    handler: (job: BenchJob, admittedMs?: number) => Promise<void>,
  ): Promise<BenchConsumer>;
}

/** BENCH_ONLY=a,b (contender keys), or every contender. */
export function selectContenders<C extends JobContender>(all: readonly C[]): C[] {
  const only = process.env.BENCH_ONLY?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!only) return [...all];
  const unknown = only.filter((key) => !all.some((c) => c.key === key));
  if (unknown.length > 0)
    throw new Error(`BENCH_ONLY: unknown contender ${unknown.join(', ')}; known: ${all.map((c) => c.key).join(', ')}`);
  return all.filter((c) => only.includes(c.key));
}
