import type { Cluster, Redis } from 'ioredis';
import type { TopicKeys } from '../../../lib/core/keys/redis-key-space.js';
import { claimDueJobsScript, type ClaimReply } from '../../../lib/delay-queue/scripts/claim-due-jobs.lua.js';

/** What a consumer that claims by hand asks for; the rest is a plain claim (no rate limit, nothing kept, no acknowledgement). */
export interface ClaimByHand {
  readonly maxClaims: number;
  readonly visibilityMs: number;
  readonly defaultMaxAttempts: number;
}

/**
 * Runs the claim script by hand on one topic shard under the operation record `record`, as a consumer
 * that then stalls or dies: the claimed jobs stay active until their visibility runs out.
 */
export function claimByHand(redis: Redis | Cluster, keys: TopicKeys, record: string, claim: ClaimByHand): Promise<ClaimReply> {
  return claimDueJobsScript.call(
    redis,
    { ...keys, record, previousRecord: record },
    {
      ...claim,
      deadMaxCount: 100,
      deadMaxAgeMs: 86_400_000,
      rateMax: 0,
      rateWindowMs: 0,
      keepsCompleted: false,
      keepCount: 0,
      keepAgeMs: 0,
      deletePrevious: false,
    },
  );
}
