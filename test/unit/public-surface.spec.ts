import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import ts from 'typescript';
import { entryPointsOf } from '../../tools/api-docs/public-api.js';

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

function sourceFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFilesUnder(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

describe('the public surface', () => {
  const exported = new Map<string, string[]>();

  beforeAll(() => {
    const program = ts.createProgram({
      rootNames: sourceFilesUnder(join(ROOT, 'lib')),
      options: {
        noResolve: true,
        types: [],
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        target: ts.ScriptTarget.ES2022,
        experimentalDecorators: true,
        noEmit: true,
      },
    });
    const checker = program.getTypeChecker();
    for (const entry of entryPointsOf(ROOT)) {
      const source = program.getSourceFile(entry.file);
      const module = source && checker.getSymbolAtLocation(source);
      if (!module) throw new Error(`entry point ${entry.subpath} is not a module: ${entry.file}`);
      exported.set(entry.subpath, checker.getExportsOfModule(module).map((symbol) => symbol.name).sort());
    }
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
