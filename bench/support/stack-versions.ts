import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Versions of the stack under test, read from the installed packages (some packages' `exports`
 * hide their package.json from `require`), with Node's own first.
 */
export function stackVersions(names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = { node: process.version };
  for (const name of names) {
    try {
      const file = join(import.meta.dirname, '..', '..', 'node_modules', name, 'package.json');
      out[name] = (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
    } catch {
      out[name] = 'not installed';
    }
  }
  return out;
}

/** `node v20.20.2, ioredis 6.0.0, …` for a report's machine line. */
export function describeVersions(versions: Readonly<Record<string, string>>): string {
  return Object.entries(versions)
    .map(([name, version]) => `${name} ${version}`)
    .join(', ');
}
