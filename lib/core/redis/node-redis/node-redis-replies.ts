import type { NodeRedisCommandOptions } from './node-redis-types.js';

/** node-redis' RESP type codes (its `RESP_TYPES`: the RESP3 type byte) that need a mapping. */
const RESP_MAP = 37; // %
const RESP_SET = 126; // ~
const RESP_DOUBLE = 44; // ,
const RESP_BIG_NUMBER = 40; // (

/**
 * The decoding every command of this transport asks for, whatever the client's own `typeMapping`:
 * strings as strings, integers as numbers (node-redis' defaults), and the RESP3 types RESP2 does not
 * have as RESP2 sends them: a map as a flat array of keys and values, a set as an array, a double
 * or a big number as the server's text.
 */
export const RESP2_COMMAND_OPTIONS: NodeRedisCommandOptions = Object.freeze({
  typeMapping: Object.freeze({ [RESP_MAP]: Array, [RESP_SET]: Array, [RESP_DOUBLE]: String, [RESP_BIG_NUMBER]: String }),
});

/**
 * Commands whose RESP3 reply nests (member, score) or (field, value) pairs in arrays of their own,
 * where RESP2 sends one flat array (`ZRANGE … WITHSCORES`, `ZPOPMIN key count`, `HRANDFIELD … WITHVALUES`).
 */
const PAIRED_IN_RESP3 = new Set([
  'zrange',
  'zrangebyscore',
  'zrevrange',
  'zrevrangebyscore',
  'zunion',
  'zinter',
  'zdiff',
  'zrandmember',
  'zpopmin',
  'zpopmax',
  'hrandfield',
]);

/**
 * A reply of `name` in the shape RESP2 gives it, from a client that speaks RESP3 (the decoding of
 * `RESP2_COMMAND_OPTIONS` already applied): pairs flattened, booleans as the integers 1 and 0.
 * Script replies need none of this: Lua's reply is converted the same way for both protocols
 * unless the script calls `redis.setresp(3)`, which ours never do.
 */
export function resp2Shape(name: string, reply: unknown): unknown {
  if (Array.isArray(reply) && PAIRED_IN_RESP3.has(name.toLowerCase()) && reply.every(Array.isArray)) {
    return (reply as unknown[][]).flat().map(booleansAsIntegers);
  }
  return booleansAsIntegers(reply);
}

function booleansAsIntegers(reply: unknown): unknown {
  if (typeof reply === 'boolean') return reply ? 1 : 0;
  return Array.isArray(reply) ? reply.map(booleansAsIntegers) : reply;
}

/**
 * What node-redis rejects with, as the rest of lib/ expects it (see `toRedisLockError`): a server's
 * error reply as an Error named 'ReplyError' whose message is the server's text ("NOSCRIPT No
 * matching script…"), where node-redis throws its `SimpleError` / `BlobError` (subclasses of
 * `ErrorReply`) named plain 'Error'; any other error-like value (a socket's ECONNRESET, which may
 * come from another realm than lib/'s `Error`) as an `Error` of this realm with the same message.
 */
export function asReplyError(error: unknown): unknown {
  if (typeof error !== 'object' || error === null || typeof (error as Error).message !== 'string') return error;
  const message = (error as Error).message;
  if (isErrorReply(error)) {
    const reply = new Error(message, { cause: error });
    reply.name = 'ReplyError';
    return reply;
  }
  if (error instanceof Error) return error;
  const copy = new Error(message, { cause: error });
  copy.name = (error as Error).name ?? 'Error';
  return copy;
}

/** Whether `error` is a server's error reply (an `ErrorReply` of node-redis), by class name: no `instanceof` on an optional peer. */
export function isErrorReply(error: object): boolean {
  for (let proto: unknown = Object.getPrototypeOf(error); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    if ((proto as { constructor?: { name?: string } }).constructor?.name === 'ErrorReply') return true;
  }
  return false;
}

/** Redis's NOSCRIPT reply to an EVALSHA of a script its cache does not hold. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError' && error.message.startsWith('NOSCRIPT');
}
