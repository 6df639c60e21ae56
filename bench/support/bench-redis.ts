import { Redis } from 'ioredis';
import { startLocalRedisServer } from '../../tools/local-redis-server.js';

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

/**
 * Counts the commands clients send to Redis while `fn` runs, through a MONITOR connection.
 * Commands run inside Lua scripts are reported by MONITOR with source "lua" and are left out, so
 * the result is client round trips by command name. MONITOR slows Redis down: never use it while
 * measuring speed.
 */
export async function countRoundTrips(url: string, fn: () => Promise<void>): Promise<Map<string, number>> {
  const client = new Redis(url);
  const counts = new Map<string, number>();
  const monitor = await client.monitor();
  // Commands of the monitoring client itself never show up; everything else on the server does.
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') return;
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
  return counts;
}
