/**
 * A private Redis Sentinel deployment for failover tests: one primary, two replicas and three
 * sentinels (`redis-server sentinel.conf --sentinel`), all on free loopback ports in temp dirs.
 *
 * Failure detection is tuned down (`down-after-milliseconds` 1000 by default) so a killed primary is
 * replaced within a few seconds. Every process is killed by `stop()`, and also if the test process
 * exits without calling it (see `killOnExit`), so a failed test leaves nothing running.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { findFreePort, startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { waitFor } from './timing.js';

export const NO_SENTINEL_MESSAGE = [
  'The failover tests need `redis-server` (with Sentinel mode, part of every redis-server build) on PATH.',
  'Install it: `sudo apt-get install redis-server` (Debian/Ubuntu) or `brew install redis` (macOS).',
].join('\n');

export interface SentinelTopologyOptions {
  /** Master name the sentinels monitor. Default 'mymaster'. */
  name?: string;
  /** Sentinel `down-after-milliseconds`. Default 1000. */
  downAfterMs?: number;
  /** Sentinel `failover-timeout`. Default 3000. */
  failoverTimeoutMs?: number;
  /** Extra `redis-server` arguments for the data nodes (primary and replicas). */
  serverArgs?: string[];
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** One data node (primary or replica) of the deployment. */
export interface SentinelDataNode {
  readonly port: number;
  readonly server: LocalRedisServer;
  /** True once it was killed by this helper. */
  readonly killed: boolean;
}

export interface RedisSentinelTopology {
  readonly name: string;
  /** Where the sentinels listen: pass as ioredis `sentinels`. */
  readonly sentinels: HostPort[];
  /** The data nodes, the initial primary first. */
  readonly nodes: SentinelDataNode[];
  /** ioredis options that connect through the sentinels to the current primary. */
  readonly redisOptions: { sentinels: HostPort[]; name: string };
  /** The primary the sentinels report now (asks one sentinel that answers). */
  currentPrimary(): Promise<HostPort>;
  /** The data node that is primary now, per the sentinels. */
  primaryNode(): Promise<SentinelDataNode>;
  /**
   * Kills (SIGKILL) the current primary; resolves once it has exited, with its port and the moment
   * (monotonic ms, `performance.now()`) the signal was sent.
   */
  killPrimary(): Promise<{ port: number; killedAt: number }>;
  /** Freezes (SIGSTOP) or thaws (SIGCONT) a data node: it keeps its sockets but answers nothing. */
  pause(port: number): void;
  resume(port: number): void;
  /**
   * Starts a killed data node again on its port, as a replica of the current primary, and resolves
   * once every sentinel lists it as a healthy replica (so it can take part in the next failover).
   */
  reviveAsReplica(port: number, timeoutMs?: number): Promise<void>;
  /** Waits until every sentinel reports a primary other than `oldPort` that answers as master. */
  waitForNewPrimary(oldPort: number, timeoutMs?: number): Promise<HostPort>;
  /** A plain client to one data node (closed by `stop()`). */
  clientTo(port: number): Redis;
  /** Kills everything and removes the temp dirs. Safe to call twice. */
  stop(): Promise<void>;
}

/** Fails (never skips) when the binary is missing, with how to install it. */
export function assertSentinelAvailable(): void {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) throw new Error(NO_SENTINEL_MESSAGE);
}

/**
 * Starts the deployment and resolves once every sentinel agrees on the primary, knows both replicas
 * and the other two sentinels, and both replicas have finished their initial sync.
 */
export async function startRedisSentinel(options: SentinelTopologyOptions = {}): Promise<RedisSentinelTopology> {
  assertSentinelAvailable();
  const name = options.name ?? 'mymaster';
  const downAfter = options.downAfterMs ?? 1000;
  const failoverTimeout = options.failoverTimeoutMs ?? 3000;
  const serverArgs = options.serverArgs ?? [];

  const nodes: Array<{ port: number; server: LocalRedisServer; killed: boolean }> = [];
  const sentinelProcs: Array<{ port: number; child: ChildProcess; dir: string }> = [];
  const clients = new Set<Redis>();
  const unregister = killOnExit(() => [...nodes.map((n) => n.server.process), ...sentinelProcs.map((s) => s.child)]);

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // ioredis arms a 2 s timer when disconnecting a client whose connection already ended.
    for (const c of clients) if (c.status !== 'end') c.disconnect();
    clients.clear();
    await Promise.all([
      ...sentinelProcs.map(async (s) => {
        await terminate(s.child);
        rmSync(s.dir, { recursive: true, force: true });
      }),
      ...nodes.map((n) => {
        sendSignal(n.server.process, 'SIGCONT');
        return n.server.stop();
      }),
    ]);
    unregister();
  };

  try {
    // Replicas announce 127.0.0.1 (the sentinels then hand that address to clients).
    const common = [...serverArgs, '--replica-announce-ip', '127.0.0.1'];
    const primary = await startLocalRedisServer({ args: common });
    nodes.push({ port: primary.port, server: primary, killed: false });
    for (let i = 0; i < 2; i++) {
      const replica = await startLocalRedisServer({ args: [...common, '--replicaof', '127.0.0.1', String(primary.port)] });
      nodes.push({ port: replica.port, server: replica, killed: false });
    }
    for (let i = 0; i < 3; i++) {
      sentinelProcs.push(await launchSentinel(name, primary.port, downAfter, failoverTimeout));
    }

    const sentinels = sentinelProcs.map((s) => ({ host: '127.0.0.1', port: s.port }));
    // A client that fails fast instead of retrying: these processes are started and killed at will.
    const failingFast = (port: number) =>
      ({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, disconnectTimeout: 100 }) as const;
    const clientTo = (port: number) => {
      const c = new Redis(failingFast(port));
      c.on('error', () => undefined);
      clients.add(c);
      return c;
    };
    const ask = async <T>(port: number, fn: (c: Redis) => Promise<T>): Promise<T> => {
      const c = new Redis({ ...failingFast(port), connectTimeout: 500, commandTimeout: 1000 });
      c.on('error', () => undefined);
      try {
        await c.connect();
        return await fn(c);
      } finally {
        c.disconnect();
      }
    };
    const primaryPerSentinel = (port: number) =>
      ask(port, async (c) => {
        const [host, p] = (await c.call('SENTINEL', 'get-master-addr-by-name', name)) as [string, string];
        return { host, port: Number(p) };
      });
    const role = (port: number) => ask(port, async (c) => ((await c.call('ROLE')) as [string])[0]);

    await waitFor(
      async () => {
        for (const s of sentinels) {
          const ok = await ask(s.port, async (c) => {
            const master = (await c.call('SENTINEL', 'get-master-addr-by-name', name)) as [string, string];
            if (Number(master[1]) !== primary.port) return false;
            const replicas = (await c.call('SENTINEL', 'replicas', name)) as string[][];
            const healthy = replicas.filter((r) => {
              const flags = r[r.indexOf('flags') + 1];
              const link = r[r.indexOf('master-link-status') + 1];
              return flags === 'slave' && link === 'ok';
            });
            const others = (await c.call('SENTINEL', 'sentinels', name)) as unknown[];
            return healthy.length === 2 && others.length === 2;
          });
          if (!ok) return false;
        }
        return true;
      },
      30_000,
      'the sentinels to agree on the primary and know both replicas and each other',
      { every: 100, retryErrors: true },
    );

    const topology: RedisSentinelTopology = {
      name,
      sentinels,
      nodes,
      redisOptions: { sentinels, name },
      async currentPrimary() {
        let lastError: unknown;
        for (const s of sentinels) {
          try {
            return await primaryPerSentinel(s.port);
          } catch (error) {
            lastError = error;
          }
        }
        throw new Error(`no sentinel answered: ${(lastError as Error)?.message}`);
      },
      async primaryNode() {
        const { port } = await topology.currentPrimary();
        const node = nodes.find((n) => n.port === port);
        if (!node) throw new Error(`the sentinels report an unknown primary on port ${port}`);
        return node;
      },
      async killPrimary() {
        const node = nodeOn((await topology.currentPrimary()).port);
        const child = node.server.process;
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        node.killed = true;
        const killedAt = performance.now();
        child.kill('SIGKILL');
        await exited;
        return { port: node.port, killedAt };
      },
      pause(port) {
        sendSignal(nodeOn(port).server.process, 'SIGSTOP');
      },
      resume(port) {
        sendSignal(nodeOn(port).server.process, 'SIGCONT');
      },
      async reviveAsReplica(port, timeoutMs = 30_000) {
        const node = nodeOn(port);
        if (!node.killed) throw new Error(`data node ${port} is running`);
        const primary = await topology.currentPrimary();
        await node.server.stop();
        node.server = await startLocalRedisServer({ port, args: [...common, '--replicaof', primary.host, String(primary.port)] });
        node.killed = false;
        await waitFor(
          async () => {
            for (const s of sentinels) {
              const ok = await ask(s.port, async (c) => {
                const replicas = (await c.call('SENTINEL', 'replicas', name)) as string[][];
                return replicas.some(
                  (r) =>
                    Number(r[r.indexOf('port') + 1]) === port &&
                    r[r.indexOf('flags') + 1] === 'slave' &&
                    r[r.indexOf('master-link-status') + 1] === 'ok',
                );
              });
              if (!ok) return false;
            }
            return true;
          },
          timeoutMs,
          `the sentinels to list ${port} as a healthy replica`,
          { every: 100, retryErrors: true },
        );
      },
      async waitForNewPrimary(oldPort, timeoutMs = 30_000) {
        let found: HostPort | undefined;
        await waitFor(
          async () => {
            const seen = await Promise.all(sentinels.map((s) => primaryPerSentinel(s.port).catch(() => undefined)));
            const ports = new Set(seen.map((p) => p?.port));
            if (ports.size !== 1 || ports.has(undefined) || ports.has(oldPort)) return false;
            const candidate = seen[0]!;
            if ((await role(candidate.port).catch(() => undefined)) !== 'master') return false;
            found = candidate;
            return true;
          },
          timeoutMs,
          `a new primary in place of port ${oldPort}`,
          { every: 100, retryErrors: true },
        );
        return found!;
      },
      clientTo,
      stop,
    };
    const nodeOn = (port: number) => {
      const node = nodes.find((n) => n.port === port);
      if (!node) throw new Error(`no data node on port ${port}`);
      return node;
    };
    return topology;
  } catch (error) {
    await stop();
    throw error;
  }
}

async function launchSentinel(
  name: string,
  primaryPort: number,
  downAfter: number,
  failoverTimeout: number,
): Promise<{ port: number; child: ChildProcess; dir: string }> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const dir = mkdtempSync(join(tmpdir(), 'nestjs-redis-lock-sentinel-'));
    const port = await findFreePort();
    const conf = join(dir, 'sentinel.conf');
    // Sentinel rewrites its config file (it records what it learns), so each one gets its own.
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        'daemonize no',
        `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 2`,
        `sentinel down-after-milliseconds ${name} ${downAfter}`,
        `sentinel failover-timeout ${name} ${failoverTimeout}`,
        `sentinel parallel-syncs ${name} 2`,
        '',
      ].join('\n'),
    );
    const child = spawn('redis-server', [conf, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      await new Promise<void>((resolve, reject) => {
        let output = '';
        const timer = setTimeout(() => fail(new Error(`redis sentinel did not start within 10 s:\n${output}`)), 10_000);
        const onData = (chunk: Buffer) => {
          output += chunk.toString();
          if (/\+monitor master/.test(output)) {
            clearTimeout(timer);
            child.stdout?.off('data', onData);
            child.stdout?.resume();
            child.stderr?.resume();
            child.off('exit', onExit);
            resolve();
          }
        };
        const onExit = (code: number | null) => fail(new Error(`redis sentinel exited with code ${code}:\n${output}`));
        const fail = (error: Error) => {
          clearTimeout(timer);
          child.kill('SIGKILL');
          reject(error);
        };
        child.stdout?.on('data', onData);
        child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
        child.once('exit', onExit);
        child.once('error', fail);
      });
      return { port, child, dir };
    } catch (error) {
      lastError = error;
      rmSync(dir, { recursive: true, force: true });
    }
  }
  throw lastError;
}

function sendSignal(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

/**
 * Kills the listed processes if the test process exits without stopping them (a crashed worker, a
 * forced exit), so no Redis is left running. Returns the function that removes the hook.
 */
export function killOnExit(processes: () => ChildProcess[]): () => void {
  const hook = () => {
    for (const child of processes()) {
      try {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGCONT');
          child.kill('SIGKILL');
        }
      } catch {
        // Already gone.
      }
    }
  };
  process.once('exit', hook);
  return () => process.off('exit', hook);
}
