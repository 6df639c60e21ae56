import { ConsumerFleet, type FleetResult } from './consumer-fleet.js';
import { monotonicMicros, type ConsumerSpec } from './consumer-protocol.js';
import { until } from './delay-stats.js';
import type { BenchJob, JobContender } from './job-contender.js';
import type { Usage, UsageMeter } from './usage-meter.js';

export interface FleetRunPlan {
  readonly bench: ConsumerSpec['bench'];
  readonly contender: JobContender;
  readonly url: string;
  readonly namespace: string;
  readonly processes: number;
  readonly consumer: Pick<ConsumerSpec, 'plan' | 'workMs'>;
  readonly jobs: readonly BenchJob[];
  /** Jobs carry their group (`g${job.g}`). */
  readonly grouped: boolean;
  /** 'before': a backlog written before the consumers start; 'during': written right after they start. */
  readonly enqueue: 'before' | 'during';
  readonly timeoutMs: number;
}

export interface FleetRun {
  readonly fleet: FleetResult;
  /** When the consumers were told to start, on the consumers' clock (monotonic µs). */
  readonly goUs: number;
  /** How long writing the jobs took. */
  readonly enqueueMs: number;
  /**
   * From `go` to the last handler: the bench process (the producer, for 'during') and the Redis
   * server. The consumer processes' CPU is `fleet.cpuMicros`.
   */
  readonly usage: Usage;
}

/**
 * One contender's run: its consumer processes, connected and idle, are told to go at once; the run
 * ends when every job has run once.
 */
export async function runFleet(plan: FleetRunPlan, meter: UsageMeter): Promise<FleetRun> {
  const producer = await plan.contender.openProducer(plan.url, plan.namespace, plan.grouped);
  let fleet: ConsumerFleet | undefined;
  try {
    fleet = await ConsumerFleet.start(
      { bench: plan.bench, contender: plan.contender.key, url: plan.url, namespace: plan.namespace, ...plan.consumer },
      plan.processes,
    );
    let enqueueMs = 0;
    const write = async () => {
      const started = performance.now();
      await producer.enqueue(plan.jobs);
      enqueueMs = performance.now() - started;
    };
    if (plan.enqueue === 'before') await write();
    const stopUsage = await meter.start();
    const goUs = monotonicMicros();
    fleet.go();
    if (plan.enqueue === 'during') await write();
    const running = fleet;
    await until(() => running.finished() >= plan.jobs.length, plan.timeoutMs, `${plan.jobs.length} jobs (${plan.contender.name})`).catch(
      (error: unknown) => {
        throw new Error(`${(error as Error).message}; ${running.finished()} of ${plan.jobs.length} ran`);
      },
    );
    const usage = await stopUsage();
    return { fleet: await fleet.stop(), goUs, enqueueMs, usage };
  } finally {
    fleet?.kill();
    await producer.close().catch(() => undefined);
  }
}
