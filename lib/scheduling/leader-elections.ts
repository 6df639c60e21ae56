import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import type { LockHandle } from '../lock/interfaces/lock-handle.interface.js';
import { LockHoldRegistry } from '../lock/lock-hold-registry.js';
import { RedisLockEvents } from '../core/events/redis-lock-events.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { LockService } from '../lock/lock.service.js';
import { LeaderCampaign } from './leader-campaign.js';
import type { LeaseDeclaration } from './lease-declaration.js';
import type { LeadershipHooks } from './leadership-hooks.interface.js';
import { LEADER_ELECTION_METADATA } from './scheduling.constants.js';

/**
 * One `@LeaderElection` of this application, as this instance sees it.
 */
export interface LeaderElectionStatus {
  /** The `@LeaderElection` key. */
  readonly key: string;
  /** The elected provider's class name. */
  readonly provider: string;
  /** The leader lock's time to live, in ms. */
  readonly ttl: number;
  /** Whether this instance leads now. */
  readonly leader: boolean;
  /** The current term's fencing token, when this instance leads. */
  readonly fencingToken?: string;
  /** Since when this instance leads (this instance's clock). */
  readonly since?: Date;
  /** Terms this instance has begun since it started (a counter for leadership changes). */
  readonly terms: number;
}

/**
 * Runs the `@LeaderElection` campaigns of the application: finds the elected providers at bootstrap
 * (refusing a request-scoped or transient one, and two for one key), campaigns for each, and steps
 * down from all of them before the application shuts down.
 *
 * @hideconstructor
 */
@Injectable()
export class LeaderElections implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('LeaderElection');
  private campaigns: LeaderCampaign[] = [];

  /** @internal Nest builds it: inject the class instead (its parameters are the module's internal pieces). */
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly locks: LockService,
    private readonly events: RedisLockEvents,
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    private readonly connection: RedisConnection,
    private readonly registry: LockHoldRegistry,
  ) {}

  /** Nest lifecycle hook: finds the `@LeaderElection` providers and starts campaigning for each. */
  async onApplicationBootstrap(): Promise<void> {
    this.campaigns = this.explore();
    await Promise.all(this.campaigns.map((campaign) => campaign.start()));
  }

  /** Steps down from every election, within `delayQueue.shutdownTimeout` (the module's shutdown budget) whether Redis answers or not. */
  async beforeApplicationShutdown(): Promise<void> {
    const deadline = performance.now() + this.config.delayQueue.shutdownTimeout;
    await Promise.all(this.campaigns.map((campaign) => campaign.stop(deadline)));
  }

  /** Every election of this application and whether this instance leads it. */
  status(): LeaderElectionStatus[] {
    return this.campaigns.map((campaign) => {
      const { key, ttl } = campaign.declaration;
      const leadership = campaign.leadership;
      const current = leadership && { fencingToken: leadership.fencingToken, since: new Date(leadership.since) };
      return { key, ttl, provider: campaign.provider, leader: leadership !== undefined, ...current, terms: campaign.terms };
    });
  }

  /** Whether this instance leads the election of `key` now. */
  isLeader(key: string): boolean {
    return this.campaigns.some((campaign) => campaign.declaration.key === key && campaign.leadership !== undefined);
  }

  private explore(): LeaderCampaign[] {
    const found: LeaderCampaign[] = [];
    const byKey = new Map<string, string>();
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as (LeadershipHooks & object) | undefined;
      const type = (instance && typeof instance === 'object' ? instance.constructor : undefined) ?? wrapper.metatype ?? undefined;
      const declaration = leaderElectionOf(type as object | undefined);
      if (!declaration) continue;
      const provider = (type as { readonly name: string }).name;
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient || !instance) {
        throw new InvalidOptionsError(
          '@LeaderElection',
          `${provider} is not a singleton (request-scoped, transient, or depending on a request-scoped provider); ` +
            'an election needs one instance per application: make it a default-scoped provider',
        );
      }
      const other = byKey.get(declaration.key);
      if (other !== undefined) {
        throw new InvalidOptionsError(
          '@LeaderElection',
          `${other} and ${provider} both campaign for "${declaration.key}" in one application; give each election its own key`,
        );
      }
      byKey.set(declaration.key, provider);
      const logsLossOf = (handle: LockHandle) => this.registry.ownerLogsLoss(handle);
      found.push(
        new LeaderCampaign(declaration, provider, instance, this.locks, this.events, this.logger, this.connection.outages, logsLossOf),
      );
    }
    return found;
  }
}

/** The declaration `@LeaderElection` recorded on a class, if any. */
function leaderElectionOf(type: object | undefined): LeaseDeclaration | undefined {
  return type ? (Reflect.getOwnMetadata(LEADER_ELECTION_METADATA, type) as LeaseDeclaration | undefined) : undefined;
}
