import { Inject, Injectable, Optional } from '@nestjs/common';
import { REDIS_LOCK_INTERNALS } from '../../core/redis-lock-internals.token.js';
import type { RedisLockInternals } from '../../redis-lock.module-internals.js';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { TopicInspector } from '../../delay-queue/topic-inspector.js';
import { RedisConnection } from '../../core/connection/redis-connection.js';
import type { HeldLock } from '../../lock/interfaces/held-lock.interface.js';
import { LockInspector } from '../../lock/lock-inspector.js';
import { LockService } from '../../lock/lock.service.js';
import { LeaderElections } from '../../scheduling/leader-elections.js';
import type { LeaseDeclaration } from '../../scheduling/lease-declaration.js';
import { OneInstanceLeases, runLockKey } from '../../scheduling/one-instance-leases.js';
import { ON_ONE_INSTANCE_METADATA } from '../../scheduling/scheduling.constants.js';
import type {
  DashboardLeaderElection,
  DashboardLeaseInRedis,
  DashboardOneInstanceLease,
  DashboardSchedules,
  DashboardScheduling as DashboardSchedulingReply,
} from './dashboard-api.interface.js';
import { REDIS_LOCK_DASHBOARD_OPTIONS } from './redis-lock-dashboard.constants.js';
import type { ResolvedDashboardOptions } from './resolve-dashboard-options.js';
import { requireRedisLockModule } from '../../core/errors/redis-lock-module-not-visible.error.js';

/** An `@OnOneInstance` lease of this application and the methods that share it. */
interface DeclaredLease {
  readonly key: string;
  readonly ttl: number;
  readonly methods: string[];
}

/**
 * The dashboard's view of work across instances: the repeatable schedules of a topic (through the
 * core's `TopicInspector`), the `@OnOneInstance` leases and `@LeaderElection`s of this application
 * as this instance sees them (`OneInstanceLeases`, `LeaderElections`, both optional) next to what
 * Redis says of their locks (`LockInspector`), so a dashboard served by an instance that owns
 * nothing still shows who does and for how long.
 */
@Injectable()
export class DashboardScheduling {
  private declared?: DeclaredLease[];

  constructor(
    @Inject(REDIS_LOCK_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    // Optional only so that a RedisLockModule the dashboard cannot see is reported by name (below).
    @Optional() @Inject(REDIS_LOCK_INTERNALS) internals: RedisLockInternals | undefined,
    @Optional() private readonly lockService: LockService,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    @Optional() private readonly elections?: LeaderElections,
  ) {
    requireRedisLockModule('RedisLockDashboardModule', {
      TopicInspector: internals?.topicInspector,
      LockInspector: internals?.lockInspector,
      LockService: lockService,
      RedisConnection: internals?.connection,
    });
    this.topics = internals!.topicInspector;
    this.locks = internals!.lockInspector;
    this.connection = internals!.connection;
    this.leases = internals!.oneInstanceLeases;
  }

  private readonly topics: TopicInspector;
  private readonly locks: LockInspector;
  private readonly connection: RedisConnection;
  /** This instance's `@OnOneInstance` leases (the scheduling providers are part of RedisLockModule). */
  private readonly leases: OneInstanceLeases;

  /** The repeatable schedules of `topic`, soonest tick first, with the Redis server's clock. */
  async schedules(topic: string): Promise<DashboardSchedules> {
    const [infos, [seconds, micros]] = await Promise.all([this.topics.schedules(topic), this.connection.command<[string, string]>('time')]);
    return {
      topic,
      now: Number(seconds) * 1000 + Math.floor(Number(micros) / 1000),
      schedules: infos.map((info) => ({
        id: info.id,
        schedule: info.schedule,
        catchUp: info.catchUp,
        nextRunAt: info.nextRunAt.getTime(),
        lastRunAt: info.lastRunAt?.getTime(),
      })),
    };
  }

  /** `@OnOneInstance` leases and leader elections: this instance's view, and their locks in Redis. */
  async scheduling(): Promise<DashboardSchedulingReply> {
    const declared = this.declaredLeases();
    const elections = this.elections?.status() ?? [];
    const names = [...declared.flatMap((lease) => [lease.key, runLockKey(lease.key)]), ...elections.map((election) => election.key)];
    const held = await this.heldLocks(names);
    const inRedis = (name: string): DashboardLeaseInRedis => {
      const lock = held.get(name);
      if (lock) {
        return {
          state: 'held',
          owners: lock.holders.map((holder) => holder.owner),
          fencingToken: lock.fencingToken,
          leaseMs: lock.leaseMs,
        };
      }
      return { state: 'free', owners: [], fencingToken: null, leaseMs: null };
    };
    const owned = new Map((this.leases?.owned() ?? []).map((lease) => [lease.key, lease]));
    const oneInstance: DashboardOneInstanceLease[] = declared.map((lease) => {
      const here = owned.get(lease.key);
      const run = inRedis(runLockKey(lease.key));
      return {
        key: lease.key,
        ttl: lease.ttl,
        methods: lease.methods,
        heldHere: here !== undefined,
        fencingToken: here?.fencingToken,
        since: here?.since,
        redis: inRedis(lease.key),
        running: run.state === 'held',
      };
    });
    const leaders: DashboardLeaderElection[] = elections.map(({ since, ...election }) => ({
      ...election,
      ...(since === undefined ? {} : { since: since.getTime() }),
      redis: inRedis(election.key),
    }));
    return {
      available: this.leases !== undefined || this.elections !== undefined,
      clientId: this.lockService.clientId,
      oneInstance,
      leaders,
    };
  }

  /** The locks among `names` held now: one read per name (no scan, so nothing is cut off). */
  private async heldLocks(names: readonly string[]): Promise<Map<string, HeldLock>> {
    const held = new Map<string, HeldLock>();
    const locks = await Promise.all([...new Set(names)].map((name) => this.locks.lock(name)));
    for (const lock of locks) if (lock && lock.kind === 'mutex') held.set(lock.name, lock);
    return held;
  }

  /**
   * The `@OnOneInstance` methods of the application's providers and controllers, grouped by lease
   * key, found once: this instance's `OneInstanceLeases` only learns of a method at its first call,
   * and a daily job's first call may be hours away.
   */
  private declaredLeases(): DeclaredLease[] {
    if (this.declared) return this.declared;
    const byKey = new Map<string, { ttl: number; methods: Set<string> }>();
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance = wrapper.instance as object | undefined;
      if (!instance || typeof instance !== 'object') continue;
      const prototype = Object.getPrototypeOf(instance) as object | null;
      if (!prototype) continue;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const method = (prototype as Record<string, unknown>)[name];
        if (typeof method !== 'function') continue;
        const declaration = Reflect.getMetadata(ON_ONE_INSTANCE_METADATA, method) as LeaseDeclaration | undefined;
        if (!declaration) continue;
        const entry = byKey.get(declaration.key) ?? { ttl: declaration.ttl, methods: new Set<string>() };
        entry.methods.add(`${instance.constructor.name}.${name}()`);
        byKey.set(declaration.key, entry);
      }
    }
    this.declared = [...byKey]
      .map(([key, { ttl, methods }]) => ({ key, ttl, methods: [...methods].sort() }))
      .sort((a, b) => a.key.localeCompare(b.key));
    return this.declared;
  }
}
