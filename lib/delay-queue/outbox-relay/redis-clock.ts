import type { RedisTransport } from '../../core/redis/redis-transport.js';

/** A sample older than this is refreshed in the background (the bound it gives stays valid). */
const REFRESH_AFTER_MS = 10_000;

/**
 * A lower bound of the Redis server's clock at a moment of the local monotonic clock, from one
 * `TIME` reply: the server read T at or before the local time r the reply arrived, so at any local
 * time x its clock shows at least T + (x - r), as long as both clocks run at the same rate (drift of
 * a few ppm is covered by the outbox's margin). Valid for x before r too, so the sample's age only
 * matters for drift; it is refreshed in the background, never awaited once there is one.
 */
export class RedisClock {
  private sample?: { readonly serverMs: number; readonly localMs: number };
  private refreshing?: Promise<void>;

  constructor(private readonly redis: Pick<RedisTransport, 'command'>) {}

  /** Resolves once there is a sample (at once when there is one); rejects if Redis cannot give the first. */
  async ready(): Promise<void> {
    if (!this.sample) return this.refresh();
    if (performance.now() - this.sample.localMs > REFRESH_AFTER_MS) void this.refresh().catch(() => undefined);
  }

  /** The server's clock at local time `localMs` (a `performance.now()` value) is at least this (ms). Call after `ready()`. */
  lowerBoundAt(localMs: number): number {
    if (!this.sample) throw new Error('RedisClock: no TIME sample yet');
    return Math.floor(this.sample.serverMs + (localMs - this.sample.localMs));
  }

  /** Takes a new sample (one TIME round trip; concurrent calls share it). */
  refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      const [seconds, micros] = await this.redis.command<[string | number, string | number]>('time');
      const localMs = performance.now();
      this.sample = { serverMs: Number(seconds) * 1000 + Math.floor(Number(micros) / 1000), localMs };
    })().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }
}
