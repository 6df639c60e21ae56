/**
 * What the app resolves a package to, as its own `require` does: shared by the common checks
 * (run-checks.ts) and the drivers app's (driver-checks.ts), which cannot load each other.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The path `name` resolves to from the app, or undefined when it is not installed. */
export function resolvedPath(appRequire: NodeJS.Require, name: string): string | undefined {
  try {
    return appRequire.resolve(name);
  } catch {
    return undefined;
  }
}

/** The installed version of `name` as the app sees it (walks up from its entry to its package.json). */
export function installedVersion(appRequire: NodeJS.Require, name: string): string {
  const entry = resolvedPath(appRequire, name);
  if (entry === undefined) return 'not installed';
  let dir = dirname(entry);
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === name) return manifest.version ?? '?';
    } catch {
      // no package.json at this level
    }
    const parent = dirname(dir);
    if (parent === dir) return '?';
    dir = parent;
  }
}
