/**
 * Instances of the sample service in child processes, for the demo and the specs: each on a free
 * port (it prints the one it got), with its own INSTANCE_ID, all on one Redis.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** One running instance of the service. */
export interface SampleInstance {
  readonly name: string;
  readonly base: string;
  readonly child: ChildProcess;
  /** Resolves when the process has exited, with its exit code or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything it printed so far. */
  output(): string;
  /** GET `path` as JSON; rejects on a status other than 2xx. */
  get<T>(path: string): Promise<T>;
}

/**
 * Starts `node <entry...>` with `env` added to this process's environment, PORT=0 and the given
 * INSTANCE_ID; resolves once it listens. Rejects with its output if it exits or takes longer than
 * `timeoutMs` (and kills it).
 */
export async function startSampleInstance(
  entry: readonly string[],
  name: string,
  env: Record<string, string>,
  timeoutMs = 180_000,
): Promise<SampleInstance> {
  const child = spawn(process.execPath, [...entry], {
    env: { ...process.env, ...env, PORT: '0', INSTANCE_ID: name, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => fail(`${name} did not listen within ${timeoutMs} ms`), timeoutMs);
    const onData = () => {
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) done(() => resolve(match[1]));
    };
    const onExit = (code: number | null, signal: string | null) => fail(`${name} exited (${code ?? signal}) before listening`);
    const fail = (why: string) =>
      done(() => {
        child.kill('SIGKILL');
        reject(new Error(`${why}:\n${output}`));
      });
    const done = (settle: () => void) => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      settle();
    };
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
  return {
    name,
    base,
    child,
    exited,
    output: () => output,
    async get(path) {
      const response = await fetch(`${base}${path}`);
      if (!response.ok) throw new Error(`GET ${base}${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as never;
    },
  };
}

/** Sends `signal` (if it still runs) and waits for the exit; after SIGTERM, SIGKILL once `graceMs` has passed. */
export async function stopSampleInstance(instance: SampleInstance, signal: NodeJS.Signals = 'SIGTERM', graceMs = 20_000) {
  if (instance.child.exitCode === null && instance.child.signalCode === null) instance.child.kill(signal);
  const timer = setTimeout(() => instance.child.kill('SIGKILL'), graceMs);
  const result = await instance.exited;
  clearTimeout(timer);
  return result;
}
