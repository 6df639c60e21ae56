import { beforeAll, describe, expect, it } from '@jest/globals';
import { exportedNames } from '../../tools/api-docs/public-api.js';

/**
 * The public surface stays small enough to hold in one's head: the names exported by each entry point
 * of package.json "exports", counted by the TypeScript checker. The main entry has the module, the
 * services, the decorators, the options users type their code with, one event map and the errors users
 * catch; internals, payload types reachable through `RedisLockEventMap` and the dashboard's data types
 * stay inside. Raising a budget is a decision: say in CHANGELOG.md what the new name is for.
 */
const ROOT = process.cwd();
const MAIN_ENTRY_BUDGET = 80;
const ALL_ENTRIES_BUDGET = 110;

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

  it('reaches event payloads through the event map, not one name per payload', () => {
    expect(exported.get('.')).toEqual(expect.arrayContaining(['RedisLockEvents', 'RedisLockEventMap', 'REDIS_LOCK_CHANNELS']));
    expect(exported.get('.')!.filter((name) => /Event$/.test(name))).toEqual([]);
  });

  it('keeps the dashboard data types and the add-ons internals out of every entry point', () => {
    const everything = [...exported.values()].flat();
    expect(everything.filter((name) => /^Dashboard/.test(name))).toEqual([]);
    for (const internal of ['LockSections', 'RedisConnection', 'LockInspector', 'TopicInspector', 'REDIS_LOCK_INTERNALS']) {
      expect(everything).not.toContain(internal);
    }
  });
});
