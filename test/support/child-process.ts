import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

/** Node's arguments that run a TypeScript file of this repository as an ES module (see tools/typescript-loader). */
export const TYPESCRIPT_NODE_ARGS: readonly string[] = ['--enable-source-maps', '--import', join(ROOT, 'tools', 'typescript-loader', 'register.js')];

/** Starts a TypeScript fixture in its own Node process (transpiled by tools/typescript-loader). */
export function spawnFixture(fixture: string, args: string[]): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, [...TYPESCRIPT_NODE_ARGS, join(ROOT, 'test', 'fixtures', fixture), ...args], {
    cwd: ROOT,
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  return Object.assign(child, { output: () => output });
}

/** Resolves with the exit code; rejects with the process output if it exits non-zero. */
export function exited(child: ChildProcess & { output: () => string }): Promise<void> {
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`fixture exited with ${code ?? signal}:\n${child.output()}`)),
    );
  });
}
