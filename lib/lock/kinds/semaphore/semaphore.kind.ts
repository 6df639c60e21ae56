import { InvalidOptionsError } from '../../../core/errors/invalid-options.error.js';
import type { SemaphoreKeys } from '../../../core/keys/redis-key-space.js';
import type { HeldLock, LockHolder } from '../../interfaces/held-lock.interface.js';
import { attemptOutcome } from '../../protocols/attempt-reply.js';
import type { LockKindDefinition } from '../../protocols/lock-kind.js';
import type { AttemptOutcome, LockProtocol, LockScriptTarget, Renewal } from '../../protocols/lock-protocol.interface.js';
import { acquirePermitScript } from './acquire-permit.lua.js';
import { readSemaphoreScript } from './read-semaphore.lua.js';
import { releasePermitScript } from './release-permit.lua.js';
import { renewPermitsScript } from './renew-permits.lua.js';

/**
 * A counting semaphore whose permits are leases: at most `permits` holders at once, and a
 * holder that crashes gives its permit back when its lease ends. Permits are not reentrant: every
 * acquire takes one more.
 */
export class SemaphoreProtocol implements LockProtocol {
  readonly kind = 'semaphore';
  readonly reentrancyKey = undefined;
  readonly wakesByOwner = false;
  readonly localFifo = false;
  readonly heartbeat = undefined;
  readonly settlesOwnTries = false;

  constructor(
    private readonly keys: SemaphoreKeys,
    private readonly permits: number,
  ) {}

  get name(): string {
    return this.keys.name;
  }

  get wakeChannel(): string {
    return this.keys.wakeChannel;
  }

  async attempt(redis: LockScriptTarget, owner: string, leaseTime: number): Promise<AttemptOutcome> {
    // Every acquire call has its own owner id: a re-sent attempt finds its permit and its token.
    const [granted, value] = await acquirePermitScript.run<[number, string | number]>(
      redis,
      [this.keys.permits, this.keys.fence, this.keys.grants],
      [owner, leaseTime, this.permits],
    );
    return attemptOutcome(granted, value);
  }

  release(redis: LockScriptTarget, owner: string): Promise<number> {
    return releasePermitScript.run<number>(
      redis,
      [this.keys.permits, this.keys.wakeChannel, this.keys.grants],
      [owner, redis.publishCommand],
    );
  }

  renewal(owner: string): Renewal {
    return { script: renewPermitsScript, keys: [this.keys.permits], member: owner };
  }
}

/** The semaphore (`semaphore(key, permits)`): its variant is the permit count; its own key family (`<prefix>:sem:{name}`). */
export const SEMAPHORE: LockKindDefinition<number> = {
  name: 'semaphore',
  scripts: [acquirePermitScript, releasePermitScript, renewPermitsScript, readSemaphoreScript],
  redlock: { described: 'A semaphore (`semaphore()`)' },
  checkVariant(permits) {
    if (!Number.isInteger(permits) || permits < 1) {
      throw new InvalidOptionsError('permits', `got ${String(permits)}; use a whole number >= 1`);
    }
  },
  protocol: (name, permits, { keySpace }) => new SemaphoreProtocol(keySpace.semaphore(name), permits),
  inspection: {
    pattern: (keySpace) => keySpace.semaphorePermitsPattern(),
    nameOf: (keySpace, key) => keySpace.semaphoreNameOf(key),
    async read(redis, keySpace, name): Promise<HeldLock | undefined> {
      const keys = keySpace.semaphore(name);
      const reply = await readSemaphoreScript.run<[string | null, Array<string | number>] | null>(redis, [keys.permits, keys.fence], []);
      if (!reply) return undefined;
      const [fence, rows] = reply;
      const holders: LockHolder[] = [];
      for (let i = 0; i < rows.length; i += 2) holders.push({ owner: String(rows[i]), leaseMs: Number(rows[i + 1]) });
      return {
        kind: 'semaphore',
        name,
        key: keys.permits,
        holders,
        fencingToken: fence ?? null,
        leaseMs: Math.max(...holders.map((h) => h.leaseMs ?? 0)),
        waiting: 0,
      };
    },
  },
};
