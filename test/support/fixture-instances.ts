import type { ChildProcess } from 'node:child_process';
import { spawnFixture } from './child-process.js';
import { waitForLine } from './wait-for-output.js';

/** A fixture process started under a name (`i0`, `i1`, …) that it prints in its `ready <name>` line once it runs. */
export interface FixtureInstance {
  readonly name: string;
  readonly child: ChildProcess & { output: () => string };
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `count` processes of test/fixtures/`fixture`, the i-th named `i<i>` and given the arguments
 * `args(name, i)`, and waits until every one printed `ready <name>`.
 */
export async function startFixtureInstances(
  fixture: string,
  count: number,
  args: (name: string, i: number) => string[],
): Promise<FixtureInstance[]> {
  const instances = Array.from({ length: count }, (_, i) => {
    const name = `i${i}`;
    const child = spawnFixture(fixture, args(name, i));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    return { name, child, exited };
  });
  await Promise.all(instances.map((instance) => waitForLine(instance.child, new RegExp(`^ready ${instance.name}$`), 60_000)));
  return instances;
}

/** Sends `signal` to every instance still running, and resolves once all have exited. */
export async function stopInstances(instances: readonly FixtureInstance[], signal: NodeJS.Signals): Promise<void> {
  await Promise.all(
    instances.map(async (instance) => {
      if (instance.child.exitCode === null && instance.child.signalCode === null) instance.child.kill(signal);
      await instance.exited;
    }),
  );
}
