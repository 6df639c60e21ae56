/**
 * One consumer instance of the multi-process job benches (groups, rate limit), started by
 * consumer-fleet.ts with `fork`. It opens its contender's consumer (connected, not consuming) and
 * sends `ready`; on `go` it starts consuming, and every handler records its job, start and end;
 * on `stop` it sends its records and its own CPU since `go`, then closes.
 *
 * Times are CLOCK_MONOTONIC (process.hrtime) in µs: one clock shared by every process of the
 * machine, so starts and ends recorded in different processes compare directly.
 *
 *   node --import ./tools/typescript-loader/register.js bench/support/consumer-process.ts '<ConsumerSpec as JSON>'
 */
import 'reflect-metadata';
import { groupContenders } from './group-contenders.js';
import { rateLimitContenders } from './rate-limit-contenders.js';
import { monotonicMicros, type ConsumerSpec, type FromConsumer, type RunRecord, type ToConsumer } from './consumer-protocol.js';
import type { BenchConsumer, BenchJob } from './job-contender.js';

const PROGRESS_EVERY_MS = 20;

/** Resolves once the message is handed to the channel (a process that exits right after would lose it otherwise). */
function send(message: FromConsumer): Promise<void> {
  return new Promise((resolve) => process.send!(message, undefined, undefined, () => resolve()));
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]) as ConsumerSpec;
  const contenders = spec.bench === 'groups' ? groupContenders : rateLimitContenders;
  const contender = contenders.find((c) => c.key === spec.contender);
  if (!contender) throw new Error(`unknown ${spec.bench} contender ${spec.contender}`);
  const records: RunRecord[] = [];
  const handler = async (job: BenchJob, admittedMs = -1) => {
    const start = monotonicMicros();
    await new Promise((resolve) => setTimeout(resolve, spec.workMs));
    records.push([job.g, job.s, start, monotonicMicros(), admittedMs]);
  };
  const consumer: BenchConsumer = await contender.openConsumer(spec.url, spec.namespace, spec.plan, handler);
  let cpuAtGo: NodeJS.CpuUsage | undefined;
  let reported = 0;
  const progress = setInterval(() => {
    if (records.length !== reported) void send({ type: 'progress', done: (reported = records.length) });
  }, PROGRESS_EVERY_MS);
  process.on('message', (message: ToConsumer) => {
    if (message.type === 'go') {
      cpuAtGo = process.cpuUsage();
      try {
        consumer.start();
      } catch (error) {
        fail(error);
      }
    } else if (message.type === 'stop') {
      const cpu = process.cpuUsage(cpuAtGo);
      clearInterval(progress);
      void send({ type: 'result', records, cpuMicros: cpu.user + cpu.system, counters: consumer.counters() })
        .then(() => consumer.close())
        .then(
          () => process.exit(0),
          () => process.exit(0),
        );
    }
  });
  await send({ type: 'ready' });
}

function fail(error: unknown): void {
  void send({ type: 'error', message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }).then(() =>
    process.exit(1),
  );
}

main().catch(fail);
