/** A Redlock hold this process won: its ids on the masters and the fencing token it was given. */
export interface WonHold {
  readonly owner: string;
  readonly hold: string;
  readonly fencingToken: string;
}

/**
 * The fencing token of every Redlock hold this process won, by lock and owner id, for as long as
 * the hold's handle lives. A re-entry (same owner, from an enclosing section or a transaction's
 * kept hold, always in this process) returns that token, as one Redis does.
 *
 * The masters cannot say it reliably: their counters are not level (a master whose grant arrived
 * after the vote kept its own value; tries that lost left steps behind), and the majority that
 * backs the token need not be the masters answering the re-entry.
 *
 * Entries are held weakly: the protocol object of the winning acquire (kept by its handle) holds
 * the `WonHold`, so a handle dropped without a release (lost, expired) takes its entry with it.
 */
export class HolderTokens {
  private readonly holds = new Map<string, WeakRef<WonHold>>();
  private readonly gone = new FinalizationRegistry<string>((id) => {
    if (this.holds.get(id)?.deref() === undefined) this.holds.delete(id);
  });

  remember(ownersKey: string, won: WonHold): void {
    const id = entryId(ownersKey, won.owner);
    this.holds.set(id, new WeakRef(won));
    this.gone.register(won, id);
  }

  tokenOf(ownersKey: string, owner: string): string | undefined {
    return this.holds.get(entryId(ownersKey, owner))?.deref()?.fencingToken;
  }

  /** The hold ended (released on the masters): its owner id is never used again. */
  forget(ownersKey: string, owner: string): void {
    this.holds.delete(entryId(ownersKey, owner));
  }
}

function entryId(ownersKey: string, owner: string): string {
  return `${ownersKey}\n${owner}`;
}
