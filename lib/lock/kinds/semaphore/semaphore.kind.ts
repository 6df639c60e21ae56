import type { SemaphoreKeys } from '../../../core/keys/redis-key-space.js';
import type { RedisClient } from '../../../core/options/redis-lock-config.js';
import { acquirePermitScript } from './acquire-permit.lua.js';
import { releasePermitScript } from './release-permit.lua.js';
import { renewPermitsScript } from './renew-permits.lua.js';
import type { AttemptOutcome, LockProtocol, Renewal } from '../../protocols/lock-protocol.interface.js';

/**
 * A counting semaphore whose permits are leases: at most `permits` holders at once, and a
 * holder that crashes gives its permit back when its lease ends. Permits are not reentrant: every
 * acquire takes one more.
 */
export class SemaphoreProtocol implements LockProtocol {
  readonly reentrancyKey = undefined;
  readonly wakesByOwner = false;
  readonly localFifo = false;
  readonly heartbeat = undefined;

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

  async attempt(client: RedisClient, owner: string, leaseTime: number): Promise<AttemptOutcome> {
    // Every acquire call has its own owner id: a re-sent attempt finds its permit and its token.
    const [ok, value] = await acquirePermitScript.run<[number, string | number]>(
      client,
      [this.keys.permits, this.keys.fence, this.keys.grants],
      [owner, leaseTime, this.permits],
    );
    return ok === 1 ? { acquired: true, fencingToken: String(value) } : { acquired: false, waitMs: Number(value) };
  }

  release(client: RedisClient, owner: string, publishCommand: string): Promise<number> {
    return releasePermitScript.run<number>(
      client,
      [this.keys.permits, this.keys.wakeChannel, this.keys.grants],
      [owner, publishCommand],
    );
  }

  renewal(owner: string): Renewal {
    return { script: renewPermitsScript, keys: [this.keys.permits], member: owner };
  }
}
