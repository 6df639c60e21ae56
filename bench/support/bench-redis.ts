import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { startLocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { UsageMeter } from './usage-meter.js';

/** The Redis a bench run talks to, and how to let go of it. */
export interface BenchRedis {
  readonly url: string;
  /** `REDIS_URL` (a server someone else runs) or `redis-server` (private, started for this run). */
  readonly source: 'REDIS_URL' | 'redis-server';
  stop(): Promise<void>;
}

/** `REDIS_URL` if set, else a private `redis-server` from PATH on a free loopback port. */
export async function provideBenchRedis(): Promise<BenchRedis> {
  const url = process.env.REDIS_URL;
  if (url) return { url, source: 'REDIS_URL', stop: async () => undefined };
  const server = await startLocalRedisServer();
  return { url: server.url, source: 'redis-server', stop: () => server.stop() };
}

export async function redisServerVersion(client: Redis): Promise<string> {
  const info = await client.info('server');
  return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
}

/** A bench run's Redis with what its report measures and says: an admin client, a usage meter on it, the version, the load. */
export interface MeteredRedis {
  readonly redis: BenchRedis;
  /** The bench's own connection (INFO, FLUSHALL); the meter reads through it. */
  readonly admin: Redis;
  readonly meter: UsageMeter;
  readonly version: string;
  /** `os.loadavg()` when the run began, for the report's machine line. */
  readonly loadAtStart: number[];
  /** Empties a private server, so that every run starts empty; a shared one (REDIS_URL) is left alone. */
  flushIfPrivate(): Promise<void>;
  /** Disconnects the admin client and lets go of the server. */
  close(): Promise<void>;
}

/** `provideBenchRedis()` with an admin client and its `UsageMeter`, the server's version and the load at start. */
export async function provideMeteredRedis(): Promise<MeteredRedis> {
  const redis = await provideBenchRedis();
  const admin = new Redis(redis.url);
  const meter = new UsageMeter(admin);
  const loadAtStart = loadavg();
  const version = await redisServerVersion(admin);
  return {
    redis,
    admin,
    meter,
    version,
    loadAtStart,
    async flushIfPrivate() {
      if (redis.source === 'redis-server') await admin.flushall();
    },
    async close() {
      admin.disconnect();
      await redis.stop();
    },
  };
}

/** Commands seen by MONITOR, by lower-case name: sent by clients, and run inside scripts. */
export interface CommandProfile {
  readonly fromClients: Map<string, number>;
  readonly fromScripts: Map<string, number>;
}

/**
 * Counts the commands clients send to Redis while `fn` runs, through a MONITOR connection.
 * Commands run inside Lua scripts are reported by MONITOR with source "lua": they are counted apart
 * (`fromScripts`), so `fromClients` is client round trips by command name. MONITOR slows Redis
 * down: never use it while measuring speed.
 */
export async function countRoundTrips(url: string, fn: () => Promise<void>): Promise<CommandProfile> {
  const client = new Redis(url);
  const fromClients = new Map<string, number>();
  const fromScripts = new Map<string, number>();
  const monitor = await client.monitor();
  // Commands of the monitoring client itself never show up; everything else on the server does.
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const counts = source === 'lua' ? fromScripts : fromClients;
    const name = String(args[0]).toLowerCase();
    counts.set(name, (counts.get(name) ?? 0) + 1);
  });
  try {
    await fn();
    // MONITOR lines trail the replies a little: give the last ones time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    monitor.disconnect();
    client.disconnect();
  }
  return { fromClients, fromScripts };
}

/**
 * Which part of a command's calls came from clients rather than from scripts, by MONITOR: 1 for a
 * command never seen inside a script (or not seen at all), 0 for one seen only inside scripts.
 */
export function clientShareOf(profile: CommandProfile): (name: string) => number {
  return (name) => {
    // commandstats names subcommands `config|get`; MONITOR shows the command alone.
    const base = name.split('|')[0];
    const direct = profile.fromClients.get(base) ?? 0;
    const scripted = profile.fromScripts.get(base) ?? 0;
    return direct + scripted === 0 ? 1 : direct / (direct + scripted);
  };
}
