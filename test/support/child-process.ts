import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from './timing.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** Node's arguments that run a TypeScript file of this repository as an ES module (see tools/typescript-loader). */
export const TYPESCRIPT_NODE_ARGS: readonly string[] = [
  '--enable-source-maps',
  '--import',
  join(ROOT, 'tools', 'typescript-loader', 'register.js'),
];

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

/** How a process ended and what it printed on each stream. */
export interface ProcessOutcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Collects what `child` prints; resolves once it has exited and closed its streams, rejects if it could not start. */
export function outcomeOf(child: ChildProcess): Promise<ProcessOutcome> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The JSON of the fixture's first stdout line `<tag> {...}`, waited for in everything it printed so far. */
export async function reportedBy<T>(child: ChildProcess & { output: () => string }, tag: string, timeoutMs = 30_000): Promise<T> {
  const line = () =>
    child
      .output()
      .split('\n')
      .find((l) => l.startsWith(`${tag} `));
  try {
    await waitFor(line, timeoutMs, `"${tag}" from the consumer process`);
  } catch (error) {
    throw new Error(`${(error as Error).message}; it printed:\n${child.output()}`, { cause: error });
  }
  return JSON.parse(line()!.slice(tag.length + 1)) as T;
}

/** What a tool run printed (both streams, as they came), how it exited, and the JSON of its `<tag> {...}` line. */
export interface SummarizedRun<T> {
  readonly summary?: T;
  readonly output: string;
  readonly code: number | null;
}

/** Runs Node with `args` from the repository root; resolves when it exits, never rejects. */
export function runSummarized<T>(args: readonly string[], tag: string): Promise<SummarizedRun<T>> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      const line = output.split('\n').find((l) => l.startsWith(`${tag} `));
      resolve({ summary: line ? (JSON.parse(line.slice(tag.length + 1)) as T) : undefined, output, code });
    });
  });
}

/** The last `lines` lines a summarized run printed, its `<tag> {...}` summary line left out: what a failure shows of the run. */
export function outputTail({ output }: SummarizedRun<unknown>, tag: string, lines: number): string {
  return output
    .split('\n')
    .filter((l) => !l.startsWith(`${tag} `))
    .slice(-lines)
    .join('\n');
}
