/** One master's answer to a fanned-out call. */
type MasterReply<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/** The answers so far, by master index; `undefined` for a master that has not answered (yet). */
export type RepliesSoFar<T> = ReadonlyArray<MasterReply<T> | undefined>;

/**
 * Waits for the masters' answers to one fanned-out call until `decided` says the outcome is known,
 * every master has answered, or `timeoutMs` passes, then resolves with a snapshot of the answers.
 * Never rejects. A master that is down or black-holed therefore costs at most `timeoutMs`, and
 * nothing when the others already decide the outcome.
 *
 * Every call gets a rejection handler here, so a late failure is never an unhandled rejection;
 * callers that must act on a late answer (undo a late grant) keep the original promises.
 */
export function collectReplies<T>(
  calls: readonly Promise<T>[],
  timeoutMs: number,
  decided: (replies: RepliesSoFar<T>) => boolean,
): Promise<Array<MasterReply<T> | undefined>> {
  return new Promise((resolve) => {
    const replies: Array<MasterReply<T> | undefined> = new Array(calls.length).fill(undefined);
    let answered = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(replies.slice());
    };
    const timer = setTimeout(finish, Math.max(0, Math.ceil(timeoutMs)));
    calls.forEach((call, i) => {
      const settle = (reply: MasterReply<T>) => {
        if (done) return;
        replies[i] = reply;
        answered++;
        if (answered === calls.length || decided(replies)) finish();
      };
      call.then(
        (value) => settle({ ok: true, value }),
        (error: unknown) => settle({ ok: false, error }),
      );
    });
    if (calls.length === 0) finish();
  });
}

/** The value of every successful answer, with its master index. */
export function successes<T>(replies: RepliesSoFar<T>): Array<{ readonly master: number; readonly value: T }> {
  const found: Array<{ master: number; value: T }> = [];
  replies.forEach((reply, master) => {
    if (reply?.ok) found.push({ master, value: reply.value });
  });
  return found;
}

/** The first failure among the answers, if any. */
export function firstError<T>(replies: RepliesSoFar<T>): unknown {
  return replies.find((r): r is { ok: false; error: unknown } => r !== undefined && !r.ok)?.error;
}
