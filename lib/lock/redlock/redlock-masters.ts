import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { RedisConnectionError } from '../../core/errors/redis-connection.error.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../../core/options/redis-lock-config.js';
import type { WakeConnectionSource } from '../protocols/lock-protocol.interface.js';
import { enforceEvictionPolicy } from '../../core/redis/eviction-policy-check.js';
import { everyMasterOf } from '../../core/redis/ioredis-maintenance.js';
import { RedisConnection } from '../../core/connection/redis-connection.js';
import { fanOutWakeConnection } from './fan-out-subscriber.js';
import { collectReplies, successes } from './quorum-replies.js';
import { RedlockMaster } from './redlock-master.js';
import { RedlockQuorum } from './redlock-quorum.js';
import { ALL_REDLOCK_SCRIPTS } from './scripts/all-redlock-scripts.js';
import { errorMessage } from '../../core/errors/error-message.js';

/**
 * The masters of Redlock mode (the `redlock` option) and the quorum that runs locks on them. In
 * single-Redis mode it holds nothing and does nothing.
 *
 * Bootstrap fails when fewer than a majority of masters answer within `connectTimeout` (no lock
 * could be taken); a minority that does not answer is logged and connected in the background.
 */
@Injectable()
export class RedlockMasters implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  readonly masters: readonly RedlockMaster[];
  /** Set in Redlock mode only. */
  readonly quorum?: RedlockQuorum;
  private readonly logger = new Logger('RedisLockModule');

  constructor(
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    private readonly connection: RedisConnection,
  ) {
    const redlock = config.redlock;
    this.masters = redlock ? redlock.clients.map((client, i) => new RedlockMaster(client, i, this.logger)) : [];
    if (redlock) {
      this.quorum = new RedlockQuorum(this.masters, redlock, (message) => this.logger.debug(message));
    }
  }

  /** The connection lock waiters subscribe through: every master's pub/sub, as one. */
  wakeConnection(): WakeConnectionSource {
    return fanOutWakeConnection(this.masters, this.config.redlock!.quorum, this.config.redlock!.requestTimeout);
  }

  async onModuleInit(): Promise<void> {
    const redlock = this.config.redlock;
    if (!redlock) return;
    const n = this.masters.length;
    if (n < 3 || n % 2 === 0) {
      this.logger.warn(
        `Redlock runs on ${n} master${n === 1 ? '' : 's'}: a majority is ${redlock.quorum}, so ` +
          `${n - redlock.quorum} may fail. Use an odd number, 3 or 5, for the best tolerance per master.`,
      );
    }
    const timeout = this.config.connectTimeout;
    // Connect every master now: their connections do not queue commands, so they must be ready
    // before the first lock, and a master that is down keeps reconnecting in the background.
    const pings = this.masters.map((master) => master.ping());
    if (timeout === 0) {
      for (const ping of pings) ping.catch(() => undefined);
      return;
    }
    const replies = await collectReplies(pings, timeout, () => false);
    const down = this.masters.filter((_, i) => !replies[i]?.ok);
    const describe = (master: RedlockMaster) => {
      const reply = replies[master.index];
      const reason = reply === undefined ? `no answer within ${timeout} ms` : reply.ok ? 'ok' : errorMessage(reply.error);
      return `${master.index} (${master.label}): ${reason}`;
    };
    if (successes(replies).length < redlock.quorum) {
      await this.closeAfterFailedBootstrap();
      throw new RedisConnectionError(
        `Only ${n - down.length} of ${n} Redlock masters answered at bootstrap; locks need ${redlock.quorum}. ` +
          `Unreachable: ${down.map(describe).join('; ')}. Check that the masters in \`redlock.clients\` are running and reachable.`,
      );
    }
    if (down.length > 0) {
      this.logger.warn(`Redlock masters unreachable at bootstrap (locks work while a majority is up): ${down.map(describe).join('; ')}`);
    }
    const up = this.masters.filter((_, i) => replies[i]?.ok).map((master) => everyMasterOf(master.client));
    const check = { mode: this.config.evictionPolicyCheck, timeoutMs: timeout, logger: this.logger, canThrow: true };
    await enforceEvictionPolicy(up, check).catch(async (error: unknown) => {
      await this.closeAfterFailedBootstrap();
      throw error;
    });
  }

  /**
   * Bootstrap is failing, and Nest runs no shutdown hook after a failed init: close every connection
   * the module created (the masters and the module's own), or they would keep the process alive.
   */
  private async closeAfterFailedBootstrap(): Promise<void> {
    for (const master of this.masters) if (master.owned) master.client.disconnect();
    await this.connection.onApplicationShutdown();
  }

  /** Loads the scripts on every master ahead of the first lock; an optimisation that never fails bootstrap. */
  onApplicationBootstrap(): void {
    for (const master of this.masters) {
      if (master.client.status !== 'ready') continue;
      void master
        .loadScripts(ALL_REDLOCK_SCRIPTS)
        .catch((error: unknown) => this.logger.debug(`Script preload on Redlock master ${master.index} skipped: ${errorMessage(error)}`));
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.masters.map((master) => master.close()));
  }
}
