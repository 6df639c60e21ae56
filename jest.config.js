/**
 * Jest runs the suite as ES modules (`node --experimental-vm-modules …/jest.js`, as the Nest 12
 * application template does): Nest 12 and its official modules are ESM-only packages.
 *
 * One Redis server is started for the whole run (test/support/global-setup.ts) and shared by the
 * workers; every spec isolates itself with its own key prefix. Type checking is done once by
 * `npm run typecheck`, so ts-jest only transpiles (isolatedModules) to keep the suite fast.
 */
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false, useESM: true }],
  },
  moduleNameMapper: {
    '^nestjs-redis-lock/transaction/(nestjs-cls|typeorm-transactional)$': '<rootDir>/lib/transaction-adapters/$1.ts',
    '^nestjs-redis-lock/(metrics|health|dashboard)$': '<rootDir>/lib/observability/$1/index.ts',
    '^nestjs-redis-lock/testing$': '<rootDir>/lib/testing/index.ts',
    '^nestjs-redis-lock/outbox/postgres$': '<rootDir>/lib/outbox/postgres/index.ts',
    '^nestjs-redis-lock$': '<rootDir>/lib/index.ts',
    // Sources import each other as `./file.js` (ESM); the file on disk is `./file.ts`.
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  globalSetup: '<rootDir>/test/support/jest-global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
  // Two workers run two spec files at once. Safe: each spec isolates itself with its own key prefix
  // on the shared Redis, and every spec that disturbs a server (kills, restarts, pauses, FLUSHALL,
  // CONFIG SET) does it to a private server of its own. The timing-sensitive specs wait for events,
  // never for a fixed time, so a second worker's load only makes them slower.
  maxWorkers: 2,
  // How long Jest waits for a worker to exit once the run is over before it kills it and prints "A
  // worker process has failed to exit gracefully" (default 500 ms). Each worker ends with a large heap
  // (the ESM module graphs of ~80 spec files, 1-1.5 GB), and freeing it after Node's 'exit' event took
  // more than 500 ms on a loaded two-core machine, though the event loop was empty ('beforeExit' fired
  // within 40 ms of the last spec). Jest goes on as soon as the workers have exited.
  workerGracefulExitTimeout: 5000,
};
