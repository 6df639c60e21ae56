import { FaultProxy } from '../../tools/fault-proxy.js';
import { testRedisUrl } from './test-app.js';
import { useResource } from './use-resource.js';

const testRedisTarget = () => ({ port: Number(new URL(testRedisUrl()).port) });

/**
 * A fault proxy in front of the run's Redis (or of `target()`, read in the hook) for a describe
 * block (`useResource`): started before its tests, stopped after them.
 */
export function useFaultProxy(target: () => { host?: string; port: number } = testRedisTarget): FaultProxy {
  return useResource(
    'the fault proxy',
    () => FaultProxy.start(target()),
    (proxy) => proxy.stop(),
  );
}
