#!/usr/bin/env node
// Part of `npm run build`: copies the non-TypeScript files the library reads at run time
// (lib/**/*.html and *.sql: the dashboard's page, the outbox migration) to the same place under dist/.
import { cpSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { mkdirSync } from 'node:fs';

const ROOT = join(import.meta.dirname, '..');
const ASSET = /\.(html|sql)$/;

for (const entry of readdirSync(join(ROOT, 'lib'), { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !ASSET.test(entry.name)) continue;
  const source = join(entry.parentPath, entry.name);
  const target = join(ROOT, 'dist', relative(join(ROOT, 'lib'), source));
  mkdirSync(dirname(target), { recursive: true });
  cpSync(source, target);
}
