/** Commands of the module that name no key: a cluster runs them on any node (or on each master, by `commandOnEveryMaster`). */
const KEYLESS = new Set(['time', 'ping', 'info', 'config', 'script', 'wait', 'cluster', 'dbsize', 'echo', 'publish', 'spublish', 'client']);

/**
 * The key a cluster routes `name args…` by: the first key of EVAL/EVALSHA (none with 0 keys), none
 * for a keyless command, else the first argument (every keyed command the module sends puts a key
 * first, and a call's keys share one slot).
 */
export function firstKeyOf(name: string, args: readonly string[]): string | undefined {
  const command = name.toLowerCase();
  if (command === 'eval' || command === 'evalsha') return Number(args[1]) > 0 ? args[2] : undefined;
  if (command === 'spublish') return args[0];
  if (KEYLESS.has(command)) return undefined;
  return args[0];
}
