import { BUILD_FORMAT } from './build-format.js';

/*
 * State that must be one per process even when an application loads both builds of the package
 * (the ES module build through `import`, the CommonJS build through `require`: the dual-package
 * hazard, docs/compatibility.md). Each such value lives on `globalThis` under a `Symbol.for` key
 * that names the package and SHARED_STATE_VERSION, so the first build to load creates it and the
 * other build uses that one. A change to the shape of any shared value bumps SHARED_STATE_VERSION:
 * two releases whose shapes differ then keep separate copies instead of reading each other's.
 */
const SHARED_STATE_VERSION = 1;

const holder = globalThis as unknown as Record<symbol, unknown>;

/** The process's one value for `name`, created by `create` the first time any build asks. */
export function processShared<T>(name: string, create: () => T): T {
  const key = Symbol.for(`nestjs-redis-lock:v${SHARED_STATE_VERSION}:${name}`);
  if (!(key in holder)) {
    Object.defineProperty(holder, key, { value: create(), enumerable: false, writable: false, configurable: false });
  }
  return holder[key] as T;
}

/** The warning's code, for `process.on('warning')` filters and `--disable-warning`. */
export const DUAL_PACKAGE_WARNING_CODE = 'NESTJS_REDIS_LOCK_DUAL_PACKAGE';

/** The builds loaded in this process so far; a second one is announced once, by a process warning. */
const loadedBuilds = processShared('loaded-builds', () => ({ formats: new Set<string>(), warned: false }));
loadedBuilds.formats.add(BUILD_FORMAT);
if (loadedBuilds.formats.size > 1 && !loadedBuilds.warned) {
  loadedBuilds.warned = true;
  process.emitWarning(
    'nestjs-redis-lock was loaded twice in this process, as an ES module (import) and as CommonJS (require). ' +
      'Lock sections, job contexts, injection tokens and `instanceof` of its errors work across the two, but its classes ' +
      'are two: a LockService or DelayQueueService of one build cannot be injected where the other build registered ' +
      'RedisLockModule. Load the package one way (see "Both builds in one process" in docs/compatibility.md).',
    { code: DUAL_PACKAGE_WARNING_CODE, type: 'DualPackageWarning' },
  );
}
