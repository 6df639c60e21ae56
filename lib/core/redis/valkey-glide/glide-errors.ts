/**
 * GLIDE's wording of a server's error reply, back to the server's own text. GLIDE (its Rust core)
 * rewrites replies two ways:
 * - codes it knows become a kind name: "An error was signalled by the server: - NoScriptError: No
 *   matching script. Please use EVAL." for "NOSCRIPT No matching script. Please use EVAL.";
 * - other codes get a colon: "WRONGTYPE: Operation against…", "OOM: command not allowed…".
 * The server's text matters: `toRedisLockError` picks its hints and its authentication handling
 * from it, and reads an Error named 'ReplyError' as the server's refusal.
 */
const KIND_CODES: Record<string, string> = {
  ResponseError: 'ERR',
  ExecAbortError: 'EXECABORT',
  BusyLoadingError: 'LOADING',
  NoScriptError: 'NOSCRIPT',
  Moved: 'MOVED',
  Ask: 'ASK',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
  ReadOnly: 'READONLY',
  NotBusy: 'NOTBUSY',
  PermissionDenied: 'NOPERM',
  AuthenticationFailed: 'WRONGPASS',
};

const SIGNALLED = /^An error was signalled by the server: - (\w+): ?([\s\S]*)$/;
const CODED = /^([A-Z][A-Z0-9_-]*): ([\s\S]*)$/;

/** The GLIDE classes a server's error reply arrives as (a script's error, a command's refusal). */
const REPLY_CLASSES = new Set(['RequestError', 'ExecAbortError']);

/** A server error reply as an Error named 'ReplyError' with the server's text; anything else unchanged. */
export function toReplyError(error: unknown): unknown {
  if (!(error instanceof Error) || !REPLY_CLASSES.has(error.name)) return error;
  const text = serverText(error.message);
  if (text === undefined) return error;
  const reply = new Error(text, { cause: error });
  reply.name = 'ReplyError';
  return reply;
}

/** The server's own text of a GLIDE-worded error reply, or undefined when it is not one. */
export function serverText(message: string): string | undefined {
  const signalled = SIGNALLED.exec(message);
  if (signalled) {
    const code = KIND_CODES[signalled[1]];
    if (code === undefined) return undefined;
    return signalled[2] ? `${code} ${signalled[2]}` : code;
  }
  const coded = CODED.exec(message);
  return coded ? `${coded[1]} ${coded[2]}` : undefined;
}

/**
 * Whether `error` says the connection failed rather than the server refusing: GLIDE's
 * ConnectionError (the socket dropped under the request: it is not sent again), TimeoutError (no
 * answer within the request timeout, Redis down or silent) and ClosingError (the client is closed,
 * or could not be created).
 */
export function isConnectionFailure(error: unknown): boolean {
  return error instanceof Error && ['ConnectionError', 'TimeoutError', 'ClosingError'].includes(error.name);
}

/** Whether `error` is GLIDE's "the client is closed" (a client closed by its owner, or never created). */
export function isClosedClient(error: unknown): boolean {
  return error instanceof Error && error.name === 'ClosingError';
}

/**
 * What GLIDE's core said about a failed connection, without its wrapping: "WRONGPASS: invalid
 * username-password pair…" (server text restored: "WRONGPASS invalid…") or "timed out" from
 * "Connection error: Standalone(Received error for address `host:port`: timed out\n)".
 */
export function connectionCauseOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const inner = /Received error for address `[^`]*`: ([\s\S]*?)\s*\)?\s*$/.exec(message)?.[1] ?? message;
  const cleaned = inner.trim().replace(/\.+$/, '');
  return serverText(cleaned) ?? cleaned;
}
