import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/** Starts a TypeScript fixture in its own Node process (ts-node, transpile only). */
export function spawnFixture(fixture: string, args: string[]): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', join(ROOT, 'test', 'fixtures', fixture), ...args], {
    cwd: ROOT,
    env: { ...process.env, TS_NODE_PROJECT: join(ROOT, 'tsconfig.json') },
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
