#!/usr/bin/env node
// Runs before `npm run demo` and `npm test`: on a fresh clone it installs the locked dependencies
// (`npm ci`) so the README's quick start is just those two commands. A no-op once installed.
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const installed = join(root, 'node_modules', '.package-lock.json');
const lock = join(root, 'package-lock.json');

if (existsSync(installed) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs) process.exit(0);
// A node_modules that is a link (a worktree sharing another checkout's install) is the developer's:
// `npm ci` would empty the folder it points to.
if (existsSync(join(root, 'node_modules')) && lstatSync(join(root, 'node_modules')).isSymbolicLink()) process.exit(0);

console.log('Installing dependencies (npm ci)…');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const result = spawnSync(npm, ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
process.exit(result.status ?? 1);
