import { Test, type TestingModule } from '@nestjs/testing';
import { DelayQueueService, RedisLockModule, type RedisLockModuleOptions } from '../../../lib/index.js';
import { FaultProxy } from '../../../tools/fault-proxy.js';
import { WorkerFleet } from '../../../tools/soak/groups/worker-fleet.js';
import { waitFor } from '../../support/timing.js';

/** Three consumer processes (tools/soak/groups/worker.ts), each reaching Redis through a fault proxy of its own, and a producer app. */
export interface ProxiedWorkerFleet {
  readonly workers: WorkerFleet;
  /** The fault proxy of each slot, in slot order. */
  readonly proxies: readonly FaultProxy[];
  /** The producer app's queue, reaching Redis directly. */
  readonly queue: DelayQueueService;
}

export interface ProxiedWorkerFleetOptions {
  /** The Redis the proxies forward to and the producer connects to. */
  readonly redis: string;
  readonly keyPrefix: string;
  /** A worker's environment beyond REDIS_URL (its proxy) and KEY_PREFIX. */
  readonly env: (slot: number) => Record<string, string>;
  /** The producer app's options beyond `redis` and `keyPrefix`. */
  readonly producer?: Omit<RedisLockModuleOptions, 'redis' | 'keyPrefix'>;
}

const SLOTS = 3;

/**
 * Starts fleets in a describe block's tests (`start`, which resolves once the three consumers are
 * consuming) and, after each test, kills the fleet, closes the producer and stops the proxies,
 * whatever the test left them in: before the `afterAll` of a private server declared with the block.
 */
export function useProxiedWorkerFleet(): { start(options: ProxiedWorkerFleetOptions): Promise<ProxiedWorkerFleet> } {
  let workers: WorkerFleet | undefined;
  let producer: TestingModule | undefined;
  const proxies: FaultProxy[] = [];
  afterEach(async () => {
    workers?.killAll();
    workers = undefined;
    await producer?.close();
    producer = undefined;
    for (const proxy of proxies.splice(0)) await proxy.stop();
  });
  return {
    async start({ redis, keyPrefix, env, producer: producerOptions = {} }) {
      const target = new URL(redis);
      for (let slot = 0; slot < SLOTS; slot++) proxies.push(await FaultProxy.start({ host: target.hostname, port: Number(target.port) }));
      const fleet = new WorkerFleet(SLOTS, (slot) => ({ REDIS_URL: proxies[slot].url, KEY_PREFIX: keyPrefix, ...env(slot) }));
      workers = fleet;
      producer = await Test.createTestingModule({ imports: [RedisLockModule.forRoot({ ...producerOptions, redis, keyPrefix })] }).compile();
      producer.useLogger(false);
      await producer.init();
      await waitFor(() => fleet.allReady, 60_000, 'the three consumers to start');
      return { workers: fleet, proxies: [...proxies], queue: producer.get(DelayQueueService) };
    },
  };
}

/** The ids of the jobs whose handler ran to the end (outcome `ok`) on any consumer of the fleet. */
export function handledJobs(workers: WorkerFleet): Set<string> {
  return new Set(
    workers
      .deliveries()
      .filter((d) => d.outcome === 'ok')
      .map((d) => d.job),
  );
}

/** The ids of the topic's dead jobs (up to 1,000, more than any checker schedules). */
export async function deadJobs(queue: DelayQueueService, topic: string): Promise<Set<string>> {
  return new Set((await queue.deadLetters(topic, { limit: 1_000 })).map((j) => j.id));
}
