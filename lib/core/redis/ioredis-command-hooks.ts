import type { Redis } from 'ioredis';
import { processShared } from '../runtime/process-shared.js';
import { replaceSendCommand, sendCommandOf, type SendCommand } from './ioredis-internals.js';

/**
 * Everything that wraps an ioredis connection's commands, outermost first. The order is fixed
 * here, whatever order the hooks are installed in:
 * - `coalesce-writes` groups a turn's writes (coalesce-writes.ts); it sees every command, refused or not;
 * - `observe-resends` marks the commands ioredis re-sends by itself as handled (observe-automatic-resends.ts);
 * - `refuse-unreachable` fails a command at once while the connection is unreachable, and arms the
 *   silence timer after a write (reachability.ts, connections the module built);
 * - `note-writes` notes when a command starts waiting on an idle socket (reachability.ts).
 */
const HOOK_ORDER = ['coalesce-writes', 'observe-resends', 'refuse-unreachable', 'note-writes'] as const;

export type CommandHookName = (typeof HOOK_ORDER)[number];

/**
 * A hook: given the next step of the chain, the step to run before it. It keeps its state outside
 * (the chain is built again when a hook joins) and calls `next` at most once per command.
 */
export type CommandHook = (next: SendCommand) => SendCommand;

interface HookChain {
  /** The client's own `sendCommand`, the chain's last step. */
  readonly own: SendCommand;
  readonly hooks: Map<CommandHookName, CommandHook>;
}

/** Each client's chain (one per process, shared by both builds: core/runtime/process-shared.ts). */
const chains = processShared('command-hook-chains', () => new WeakMap<object, HookChain>());

/**
 * Adds `hook` under `name` to `client`'s one hook chain: the client's `sendCommand` is replaced by
 * the chain composed once here (one closure per hook, nothing looked up per command). Returns false
 * and changes nothing when the client already has a hook of that name.
 */
export function useCommandHook(client: Redis, name: CommandHookName, hook: CommandHook): boolean {
  let chain = chains.get(client);
  if (!chain) {
    chain = { own: sendCommandOf(client), hooks: new Map() };
    chains.set(client, chain);
  }
  if (chain.hooks.has(name)) return false;
  chain.hooks.set(name, hook);
  const own = chain.own;
  let send: SendCommand = (command, stream) => own.call(client, command, stream);
  for (let i = HOOK_ORDER.length - 1; i >= 0; i--) {
    const wrap = chain.hooks.get(HOOK_ORDER[i]);
    if (wrap) send = wrap(send);
  }
  replaceSendCommand(client, send);
  return true;
}

/** Whether `client` has a hook of that name. */
export function hasCommandHook(client: Redis, name: CommandHookName): boolean {
  return chains.get(client)?.hooks.has(name) ?? false;
}
