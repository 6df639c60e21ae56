import type { Redis } from 'ioredis';
import { hasCommandHook, useCommandHook, type CommandHookName } from '../../../../lib/core/redis/ioredis-command-hooks.js';
import type { QueuedCommand } from '../../../../lib/core/redis/ioredis-internals.js';

/** An object with ioredis' `sendCommand` slot, recording the calls that reach it (the chain's last step). */
function sendingClient(calls: string[]) {
  const client = {
    sendCommand(this: unknown, command: QueuedCommand) {
      calls.push(this === client ? `own:${command.name}` : 'own called without the client as this');
      return 'sent';
    },
  };
  return client;
}

const command = (name: string) => ({ name, promise: Promise.resolve(), reject: () => undefined }) as QueuedCommand;

describe('the ioredis command hook chain', () => {
  const recording =
    (calls: string[], name: CommandHookName) => (next: (c: QueuedCommand, s?: unknown) => unknown) => (c: QueuedCommand, s?: unknown) => {
      calls.push(name);
      return next(c, s);
    };

  it("runs the hooks outermost first in its fixed order, whatever order they were installed in, then the client's own sendCommand", () => {
    const calls: string[] = [];
    const client = sendingClient(calls);
    const redis = client as unknown as Redis;
    for (const name of ['note-writes', 'coalesce-writes', 'refuse-unreachable', 'observe-resends'] as const) {
      useCommandHook(redis, name, recording(calls, name));
    }
    expect(client.sendCommand(command('evalsha'))).toBe('sent');
    expect(calls).toEqual(['coalesce-writes', 'observe-resends', 'refuse-unreachable', 'note-writes', 'own:evalsha']);
  });

  it('adds a hook of a name once: a second install changes nothing', () => {
    const calls: string[] = [];
    const client = sendingClient(calls);
    const redis = client as unknown as Redis;
    expect(useCommandHook(redis, 'observe-resends', recording(calls, 'observe-resends'))).toBe(true);
    expect(useCommandHook(redis, 'observe-resends', recording(calls, 'observe-resends'))).toBe(false);
    expect(hasCommandHook(redis, 'observe-resends')).toBe(true);
    expect(hasCommandHook(redis, 'coalesce-writes')).toBe(false);
    client.sendCommand(command('get'));
    expect(calls).toEqual(['observe-resends', 'own:get']);
  });

  it('lets a hook answer without sending (a command refused while unreachable never reaches the socket)', () => {
    const calls: string[] = [];
    const client = sendingClient(calls);
    const redis = client as unknown as Redis;
    useCommandHook(redis, 'coalesce-writes', recording(calls, 'coalesce-writes'));
    useCommandHook(redis, 'refuse-unreachable', () => () => 'refused');
    useCommandHook(redis, 'note-writes', recording(calls, 'note-writes'));
    expect(client.sendCommand(command('set'))).toBe('refused');
    expect(calls).toEqual(['coalesce-writes']);
  });
});
