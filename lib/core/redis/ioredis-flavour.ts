import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from '../options/redis-lock-config.js';
import { loadDriverPackage } from './driver-packages.js';

/**
 * The two ioredis-API drivers: ioredis itself and iovalkey, its fork for Valkey (same classes,
 * options, events and private fields as ioredis 5). The ioredis transport builds its clients
 * with the flavour's classes and tells the two kinds of client apart by `isCluster`, which both
 * set, never by `instanceof` of one package's class.
 */
export interface IoredisFlavour {
  readonly driver: 'ioredis' | 'iovalkey';
  readonly Redis: typeof Redis;
  readonly Cluster: typeof Cluster;
  /**
   * Whether its `Cluster` can keep one subscriber per master (`shardedSubscribers`, ioredis 5.6+).
   * iovalkey 0.4 cannot: it sends every SSUBSCRIBE to one node, which answers MOVED for most
   * channels. On such a cluster the module uses classic pub/sub (PUBLISH reaches every node
   * over the cluster bus), correct everywhere, at the cost of every message crossing every node.
   */
  readonly shardedPubSub: boolean;
}

/** The flavour of `driver`, its package loaded on first use (iovalkey is an optional peer). */
export function ioredisFlavour(driver: 'ioredis' | 'iovalkey'): IoredisFlavour {
  return (FLAVOURS[driver] ??= load(driver));
}

const FLAVOURS: Partial<Record<'ioredis' | 'iovalkey', IoredisFlavour>> = {};

function load(driver: 'ioredis' | 'iovalkey'): IoredisFlavour {
  const classes = loadDriverPackage(driver) as { Redis: typeof Redis; Cluster: typeof Cluster };
  return { driver, Redis: classes.Redis, Cluster: classes.Cluster, shardedPubSub: driver === 'ioredis' };
}

/** A cluster client of either flavour (ioredis and iovalkey both set `isCluster`). */
export function isIoredisCluster(client: RedisClient): client is Cluster {
  return (client as { isCluster?: unknown }).isCluster === true;
}
