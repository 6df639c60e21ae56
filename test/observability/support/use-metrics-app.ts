import { redisOptionFor } from '../../support/test-driver.js';
import type { Provider, Type } from '@nestjs/common';
import { RedisLockMetricsModule, type RedisLockMetricsOptions } from 'nestjs-redis-lock/metrics';
import { Registry } from 'prom-client';
import { RedisLockModule, type RedisLockModuleOptions } from '../../../lib/index.js';
import { testRedisUrl, uniquePrefix } from '../../support/test-app.js';
import { useTestingModule, type ModuleUnderTest } from '../../support/use-testing-module.js';

export interface MetricsAppSetup {
  readonly redisLock?: RedisLockModuleOptions;
  readonly metrics?: Omit<RedisLockMetricsOptions, 'registry'>;
  readonly providers?: Array<Provider | Type>;
}

/** An app with RedisLockMetricsModule on a registry of its own, and a reader of that registry. */
export interface MetricsAppUnderTest extends ModuleUnderTest {
  readonly registry: Registry;
  /** The value of metric `name` in its series with `labels` (a subset of the series' labels), if there is one. */
  value(name: string, labels: Record<string, string>): Promise<number | undefined>;
}

/** Starts a global RedisLockModule (prefix `label`) with RedisLockMetricsModule before the block's tests. */
export function useMetricsApp(label: string, { redisLock = {}, metrics = {}, providers = [] }: MetricsAppSetup = {}): MetricsAppUnderTest {
  const registry = new Registry();
  const app = useTestingModule(() => ({
    imports: [
      RedisLockModule.forRoot({ redis: redisOptionFor(testRedisUrl()), keyPrefix: uniquePrefix(label), isGlobal: true, ...redisLock }),
      RedisLockMetricsModule.forRoot({ registry, ...metrics }),
    ],
    providers,
  }));
  const reader: Pick<MetricsAppUnderTest, 'registry' | 'value'> = {
    registry,
    async value(name, labels) {
      const metric = await registry.getSingleMetric(name)?.get();
      return metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
    },
  };
  // The app's getters are inherited, so they still read the app when the tests run.
  return Object.assign(Object.create(app) as ModuleUnderTest, reader);
}
