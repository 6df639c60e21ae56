import type { RedisClient } from '../../core/options/redis-lock-config.js';
import { RedisScript, type LuaSnippet } from '../../core/redis/redis-script.js';
import type { RedisTransport } from '../../core/redis/redis-transport.js';

/** How an argument reaches the Lua: `int` a number (tonumber), `text` a string as sent, `flag` true when sent as 1. */
export type ScriptArgType = 'int' | 'text' | 'flag';

/** A value the caller passes for an argument of that type. */
type ArgValue<T extends ScriptArgType> = T extends 'flag' ? boolean : T extends 'int' ? number : string;

/**
 * A script's contract, stated once: its keys and arguments by name, each in a fixed slot (KEYS and
 * ARGV in the order listed), an optional list of records repeated at the end of ARGV (each of the
 * fields named, in that order), and the decoding of its reply.
 */
export interface ScriptContract<K extends string, A extends Record<string, ScriptArgType>, F extends string, R> {
  /** KEYS, in slot order. A delay-queue script opens with the five topic keys (topic-base-lua-snippet.ts). */
  readonly keys: readonly K[];
  /** ARGV, in slot order (the object's key order). */
  readonly args: A;
  /** Records repeated after the fixed ARGV (e.g. acknowledgements), each `fields` long. */
  readonly repeated?: { readonly name: string; readonly fields: readonly F[] };
  /** Turns the raw reply into a named object. */
  readonly decode: (reply: unknown) => R;
}

/** The arguments of a contract, by name, as a caller passes them. */
export type ArgValues<A extends Record<string, ScriptArgType>> = { readonly [N in keyof A]: ArgValue<A[N]> };
/** The arguments of a script, by name (e.g. `ScriptArgs<typeof ackJobsScript>`). */
export type ScriptArgs<S> = S extends JobScript<infer _K, infer A, infer _F, infer _R> ? ArgValues<A> : never;

/**
 * A Lua script with a named contract. The Lua sees its keys as `KEY.<name>` and its arguments as
 * `ARG.<name>` (numbers for `int`, booleans for `flag`); the repeated records start at ARGV slot
 * `<NAME>_FROM` (e.g. `ACKS_FROM`) and are `<NAME>_STRIDE` long. Callers pass objects by name;
 * no slot's meaning depends on how many keys or arguments came before it.
 */
export class JobScript<K extends string, A extends Record<string, ScriptArgType>, F extends string, R> extends RedisScript {
  private readonly argNames: readonly (keyof A & string)[];

  constructor(
    name: string,
    readonly contract: ScriptContract<K, A, F, R>,
    body: string,
    uses: readonly LuaSnippet[] = [],
  ) {
    super(name, body, [contractSnippet(name, contract), ...uses]);
    this.argNames = Object.keys(contract.args);
  }

  /** Runs the script with its keys and arguments by name, and the repeated records; resolves the decoded reply. */
  call(
    /** The module's connection (its transport), or an ioredis client directly (tests, tools). */
    client: RedisClient | Pick<RedisTransport, 'runScript'>,
    keys: Readonly<Record<K, string>>,
    args: ArgValues<A>,
    records: readonly Readonly<Record<F, string | number>>[] = [],
  ): Promise<R> {
    return this.run(client, this.keyList(keys), this.argList(args, records)).then(this.contract.decode);
  }

  /** The KEYS list, in the contract's slots. */
  keyList(keys: Readonly<Record<K, string>>): string[] {
    return this.contract.keys.map((name) => keys[name]);
  }

  /** The ARGV list, in the contract's slots, then the repeated records' fields. */
  argList(args: ArgValues<A>, records: readonly Readonly<Record<F, string | number>>[] = []): (string | number)[] {
    const list: (string | number)[] = [];
    for (const name of this.argNames) {
      const value = args[name] as string | number | boolean;
      list.push(typeof value === 'boolean' ? (value ? 1 : 0) : value);
    }
    const fields = this.contract.repeated?.fields ?? [];
    for (const record of records) for (const field of fields) list.push(record[field]);
    return list;
  }
}

/** A claim's flag from extend-jobs or set-progress: 1 still held, 2 cancelled while it ran, 0 lost otherwise. */
export type ClaimOutcome = 'held' | 'cancelled' | 'lost';

export function claimOutcome(flag: unknown): ClaimOutcome {
  return Number(flag) === 1 ? 'held' : Number(flag) === 2 ? 'cancelled' : 'lost';
}

/** What schedule-jobs or write-outbox-job did with one job: stored it, kept the one with its id, or replaced that one. */
export type WriteOutcome = 'created' | 'existing' | 'replaced';

/** A job's status from schedule-jobs or write-outbox-job (makeRoomFor, store-job-lua-snippet.ts): 1, 0 or 2. */
export function writeOutcome(status: unknown): WriteOutcome {
  return Number(status) === 1 ? 'created' : Number(status) === 2 ? 'replaced' : 'existing';
}

/** What a schedule did with a job scheduled with a dedupe, and `id`, the job concerned: its own, or the one holding its key. */
export interface DedupedWrite {
  readonly outcome: WriteOutcome;
  readonly id: string;
}

/** What schedule-jobs did with one job: its `WriteOutcome`, or for a job with a dedupe a `DedupedWrite`. */
export type JobWritten = WriteOutcome | DedupedWrite;

/** One entry of schedule-jobs' reply: a status, or for a job with a dedupe the pair status, id of the job concerned. */
export function jobWritten(entry: unknown): JobWritten {
  return Array.isArray(entry) ? { outcome: writeOutcome(entry[0]), id: String(entry[1]) } : writeOutcome(entry);
}

/** The outcome of a `JobWritten`. */
export function outcomeOf(written: JobWritten): WriteOutcome {
  return typeof written === 'string' ? written : written.outcome;
}

/** The id of the job a `JobWritten` concerns; `own`: the id the job was written with. */
export function writtenIdOf(written: JobWritten, own: string): string {
  return typeof written === 'string' ? own : written.id;
}

/** The Lua that names the contract's KEYS and ARGV slots: the first lines of the script. */
function contractSnippet(name: string, contract: ScriptContract<string, Record<string, ScriptArgType>, string, unknown>): LuaSnippet {
  const keys = contract.keys.map((key, i) => `${key} = KEYS[${i + 1}]`).join(', ');
  const argNames = Object.keys(contract.args);
  const args = argNames
    .map((arg, i) => {
      const type = contract.args[arg];
      const slot = `ARGV[${i + 1}]`;
      return `${arg} = ${type === 'int' ? `tonumber(${slot})` : type === 'flag' ? `${slot} == '1'` : slot}`;
    })
    .join(', ');
  const records = contract.repeated?.name.toUpperCase();
  const stride = contract.repeated?.fields.length;
  const repeated = contract.repeated ? `\nlocal ${records}_FROM, ${records}_STRIDE = ${argNames.length + 1}, ${stride}` : '';
  return { name: `${name}Contract`, source: `\nlocal KEY = { ${keys} }\nlocal ARG = { ${args} }${repeated}\n` };
}
