import type { RedisTransport } from '../../core/redis/redis-transport.js';
import type { RedisScript } from '../../core/redis/redis-script.js';
import type { Renewal } from './lock-protocol.interface.js';

/** Runs one renewal script over several holds of its kind; resolves 1 (renewed) or 0 per hold. */
export function runRenewal(
  redis: Pick<RedisTransport, 'runScript'>,
  script: RedisScript,
  renewals: readonly Renewal[],
  leaseTime: number,
): Promise<number[]> {
  return script.run<number[]>(
    redis,
    renewals.flatMap((r) => r.keys),
    [leaseTime, ...renewals.map((r) => r.member)],
  );
}
