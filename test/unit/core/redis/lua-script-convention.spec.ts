import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { RedisScript, snippetsInOrder, type LuaSnippet } from '../../../../lib/core/redis/redis-script.js';
import { ALL_DELAY_QUEUE_SCRIPTS } from '../../../../lib/delay-queue/scripts/all-delay-queue-scripts.js';
import { ALL_REDLOCK_SCRIPTS } from '../../../../lib/lock/redlock/scripts/all-redlock-scripts.js';
import { ALL_LOCK_SCRIPTS } from '../../../../lib/lock/kinds/all-lock-kinds.js';

/*
 * One convention for every Lua script of the library: a script is one operation in one file
 * `<operation>.lua.ts` of its engine's scripts folder (for the lock engine: its kind's folder),
 * exporting one `<operation>Script`, a RedisScript named `<operation>`, with a header that documents KEYS, ARGV and the reply. Shared
 * Lua lives in `*lua-snippets.ts` files as LuaSnippets that a script lists in its `uses` (never
 * pasted into the body by hand). Each engine has one list of its scripts for preloading, and each
 * script of the folder is in it exactly once.
 */

const lib = join(import.meta.dirname, '../../../../lib');

interface Engine {
  readonly folder: string;
  readonly list: readonly RedisScript[];
}

/** The lock engine keeps a kind's scripts in the kind's folder (`lock/kinds/<kind>/`), one preload list for all. */
const LOCK_KIND_FOLDERS = readdirSync(join(lib, 'lock/kinds'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => `lock/kinds/${entry.name}`);

const ENGINES: readonly Engine[] = [
  ...LOCK_KIND_FOLDERS.map((folder) => ({ folder, list: ALL_LOCK_SCRIPTS })),
  { folder: 'lock/redlock/scripts', list: ALL_REDLOCK_SCRIPTS },
  { folder: 'delay-queue/scripts', list: ALL_DELAY_QUEUE_SCRIPTS },
];

interface ScriptFile {
  readonly path: string;
  readonly text: string;
  readonly exports: Record<string, unknown>;
}

async function filesOf(folder: string, pattern: RegExp): Promise<ScriptFile[]> {
  const dir = join(lib, folder);
  const names = readdirSync(dir).filter((name) => pattern.test(name));
  return Promise.all(
    names.map(async (name) => ({
      path: join(dir, name),
      text: readFileSync(join(dir, name), 'utf8'),
      exports: (await import(join(dir, name))) as Record<string, unknown>,
    })),
  );
}

/** `claim-due-jobs.lua.ts` -> `claimDueJobs` */
function operationOf(path: string): string {
  const base = path
    .split('/')
    .pop()!
    .replace(/\.lua\.ts$/, '');
  return base.replace(/-([a-z])/g, (_match, letter: string) => letter.toUpperCase());
}

/** A list of KEYS names a snippet reads (`KEY.<name>`), shared by the scripts that use the snippet. */
function isKeyNameList(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0 && value.every((name) => typeof name === 'string');
}

function isSnippet(value: unknown): value is LuaSnippet {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as LuaSnippet).name === 'string' &&
    typeof (value as LuaSnippet).source === 'string'
  );
}

describe.each(ENGINES.map((engine) => [engine.folder, engine] as const))('Lua scripts of lib/%s', (folder, engine) => {
  let scriptFiles: ScriptFile[];

  beforeAll(async () => {
    scriptFiles = await filesOf(folder, /\.lua\.ts$/);
  });

  it('has script files', () => {
    expect(scriptFiles.length).toBeGreaterThan(0);
  });

  it('defines one script per file, named after the file: <operation>.lua.ts exports <operation>Script named <operation>', () => {
    const wrong = scriptFiles.flatMap((file) => {
      const operation = operationOf(file.path);
      const exported = Object.entries(file.exports);
      const fine =
        exported.length === 1 &&
        exported[0]![0] === `${operation}Script` &&
        exported[0]![1] instanceof RedisScript &&
        exported[0]![1].name === operation;
      return fine ? [] : [`${relative(lib, file.path)}: ${exported.map(([name]) => name).join(', ')}`];
    });
    expect(wrong).toEqual([]);
  });

  it('documents KEYS, ARGV and the reply in the header of every script', () => {
    const undocumented = scriptFiles.flatMap((file) => {
      const header = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*export const \w+ = new (?:RedisScript|JobScript)\(/.exec(file.text)?.[1] ?? '';
      const missing = ['KEYS', 'ARGV', 'Returns'].filter((word) => !new RegExp(`^\\s*\\*\\s.*\\b${word}\\b`, 'm').test(header));
      return missing.length === 0 ? [] : [`${relative(lib, file.path)}: no ${missing.join(', ')}`];
    });
    expect(undocumented).toEqual([]);
  });

  it('composes shared Lua through `uses`, never by pasting a snippet into the body', () => {
    const pasted = scriptFiles.filter((file) => /\$\{LUA_/.test(file.text)).map((file) => relative(lib, file.path));
    expect(pasted).toEqual([]);
  });

  it("lists every script of the folder exactly once in the engine's preload list", () => {
    const counts = scriptFiles.map((file) => {
      const script = Object.values(file.exports)[0];
      return [operationOf(file.path), engine.list.filter((listed) => listed === script).length] as const;
    });
    expect(counts.filter(([, count]) => count !== 1)).toEqual([]);
  });

  it('lists no script twice', () => {
    expect(new Set(engine.list).size).toBe(engine.list.length);
  });
});

describe('Lua snippets', () => {
  const snippetFolders = ['core/redis', 'lock/protocols', ...LOCK_KIND_FOLDERS, 'delay-queue/scripts'];

  it('are LuaSnippets (or plain constants the Lua interpolates, or the key names it reads), in *lua-snippets.ts files', async () => {
    const files = (await Promise.all(snippetFolders.map((folder) => filesOf(folder, /lua-snippets\.ts$/)))).flat();
    expect(files.length).toBeGreaterThanOrEqual(2);
    const odd = files.flatMap((file) =>
      Object.entries(file.exports)
        .filter(([, value]) => !isSnippet(value) && typeof value !== 'string' && typeof value !== 'number' && !isKeyNameList(value))
        .map(([name]) => `${relative(lib, file.path)}: ${name}`),
    );
    expect(odd).toEqual([]);
  });

  it('come before their users, each once, required ones first', () => {
    const a: LuaSnippet = { name: 'a', source: 'A;' };
    const b: LuaSnippet = { name: 'b', source: 'B;', requires: [a] };
    const c: LuaSnippet = { name: 'c', source: 'C;', requires: [a, b] };
    expect(snippetsInOrder([c, b, a]).map((snippet) => snippet.name)).toEqual(['a', 'b', 'c']);
    expect(new RedisScript('op', '\nreturn 1', [c]).source).toBe('A;B;C;\nreturn 1');
    expect(new RedisScript('op', 'return 1').source).toBe('return 1');
  });

  it('give every script of the library its own text (no two scripts share a SHA)', () => {
    const scripts = [...new Set([...ALL_LOCK_SCRIPTS, ...ALL_REDLOCK_SCRIPTS, ...ALL_DELAY_QUEUE_SCRIPTS])];
    expect(new Set(scripts.map((script) => script.sha)).size).toBe(scripts.length);
  });
});
