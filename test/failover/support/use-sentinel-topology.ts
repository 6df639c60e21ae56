import type { TestingModule } from '@nestjs/testing';
import { startRedisSentinel, type RedisSentinelTopology } from '../../support/redis-sentinel.js';
import { UnhandledRejections } from '../../support/unhandled-rejections.js';
import { stopAllLoads } from './failover-harness.js';
import { readThrough } from '../../support/use-resource.js';

/** A Sentinel topology shared by a spec's tests, and the apps the tests made on it. */
export interface SentinelSuite {
  /** The running topology, read through (`readThrough`): use it in a test or a hook registered after `useSentinelTopology`. */
  readonly topology: RedisSentinelTopology;
  /** Apps pushed here are closed after the spec's tests, before the topology stops. */
  readonly apps: TestingModule[];
}

/**
 * Starts a Sentinel topology before the spec's tests; after them stops the loads still running,
 * closes the apps and stops the topology. Each test must end with no unhandled rejection.
 */
export function useSentinelTopology(): SentinelSuite {
  let topology: RedisSentinelTopology | undefined;
  const apps: TestingModule[] = [];
  const unhandled = new UnhandledRejections();

  beforeAll(async () => {
    unhandled.start();
    topology = await startRedisSentinel();
  }, 60_000);
  afterAll(async () => {
    unhandled.stop();
    await stopAllLoads();
    await Promise.allSettled(apps.map((a) => a.close()));
    await topology?.stop();
  }, 30_000);
  afterEach(() => expect(unhandled.reasons).toEqual([]));

  return {
    topology: readThrough('the Sentinel topology', () => topology),
    apps,
  };
}
