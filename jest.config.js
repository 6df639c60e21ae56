/**
 * One Redis server is started for the whole run (test/support/global-setup.ts) and shared by the
 * workers; every spec isolates itself with its own key prefix. Type checking is done once by
 * `npm run typecheck`, so ts-jest only transpiles (isolatedModules) to keep the suite fast.
 */
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }],
  },
  moduleNameMapper: {
    '^nestjs-redis-lock/transaction/(nestjs-cls|typeorm-transactional)$': '<rootDir>/lib/transaction/adapters/$1',
    '^nestjs-redis-lock/(metrics|health|dashboard)$': '<rootDir>/lib/observability/$1',
    '^nestjs-redis-lock$': '<rootDir>/lib/index.ts',
    '^nestjs-redis-lock/(.*)$': '<rootDir>/lib/$1',
  },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
};
