import { beforeAll, describe, expect, it } from '@jest/globals';
import { exportedNames } from '../../tools/api-docs/public-api.js';

/**
 * The public surface stays small enough to hold in one's head: the names exported by each entry point
 * of package.json "exports", counted by the TypeScript checker. The main entry has the module, the
 * services, the decorators, the errors users catch, and every type a user meets through them (options,
 * event payloads, handler and status types): a type reachable from the public API is exported so that
 * code using it can name it (under `declaration: true`, a provider returning `LeaderElections.status()`
 * needs `LeaderElectionStatus`). `npm run api:check` (API Extractor, ae-forgotten-export) enforces that
 * side; this spec bounds the count. Internals and the dashboard's data types stay inside. Raising a
 * budget is a decision: say in CHANGELOG.md what the new names are for.
 */
const ROOT = process.cwd();
const MAIN_ENTRY_BUDGET = 139;
const ALL_ENTRIES_BUDGET = 183;

describe('the public surface', () => {
  let exported: Map<string, string[]>;

  beforeAll(() => {
    exported = exportedNames(ROOT);
  }, 120_000);

  it(`exports at most ${MAIN_ENTRY_BUDGET} names from the main entry`, () => {
    expect(exported.get('.')!.length).toBeLessThanOrEqual(MAIN_ENTRY_BUDGET);
  });

  it(`exports at most ${ALL_ENTRIES_BUDGET} names from all entry points together`, () => {
    const total = [...exported.values()].reduce((sum, names) => sum + names.length, 0);
    expect(total).toBeLessThanOrEqual(ALL_ENTRIES_BUDGET);
  });

  it('names every event payload the event map carries, beside the map', () => {
    expect(exported.get('.')).toEqual(expect.arrayContaining(['RedisLockEvents', 'RedisLockEventMap', 'REDIS_LOCK_CHANNELS']));
    expect(exported.get('.')).toEqual(
      expect.arrayContaining(['LockLostEvent', 'JobFailedEvent', 'OneInstanceSkippedEvent', 'OutboxRowParkedEvent']),
    );
  });

  it('keeps the dashboard data types and the add-ons internals out of every entry point', () => {
    const everything = [...exported.values()].flat();
    expect(everything.filter((name) => /^Dashboard/.test(name) && name !== 'DashboardAccessHook')).toEqual([]);
    for (const internal of [
      'LockSections',
      'RedisConnection',
      'LockInspector',
      'TopicInspector',
      'TopicDirectory',
      'REDIS_LOCK_INTERNALS',
      'SectionMode',
      'RedisLockConfig',
    ]) {
      expect(everything).not.toContain(internal);
    }
  });
});
