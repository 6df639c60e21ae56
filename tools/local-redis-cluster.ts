/**
 * Starts and stops a private Redis Cluster on loopback (N masters, each with R replicas): used by the
 * cluster test suites, the failover tests and `npm run bench:cluster`.
 *
 * Every node is a `redis-server` from PATH with its own temp directory, AOF on, RDB off, and a short
 * `cluster-node-timeout` so that a failover after `killNode` takes a few seconds, not fifteen.
 */
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { findFreePort, hasRedisServerBinary, startLocalRedisServer, type LocalRedisServer } from '../lib/testing/local-redis-server.js';

/** One node's address, in the shape ioredis' `Cluster` takes as a startup node. */
export interface ClusterNodeAddress {
  readonly host: string;
  readonly port: number;
}

export interface LocalRedisClusterOptions {
  /** Number of masters (slots are spread evenly over them). Default 3, at least 3 (`redis-cli` refuses fewer). */
  masters?: number;
  /** Replicas of each master. Default 1. */
  replicasPerMaster?: number;
  /** `cluster-node-timeout` in ms: how long a node must be unreachable before a failover starts. Default 2000. */
  nodeTimeoutMs?: number;
  /** Extra `redis-server` arguments for every node. */
  args?: string[];
}

/** A running cluster and the handles to disturb it. */
export interface LocalRedisCluster {
  /** Every node, masters and replicas, in start order (the startup nodes to give ioredis). */
  readonly nodes: readonly ClusterNodeAddress[];
  /** `redis-server` when this process started the nodes, `REDIS_CLUSTER_NODES` for an existing cluster. */
  readonly source: 'redis-server' | 'REDIS_CLUSTER_NODES';
  /** The nodes that are masters now (asks the cluster: roles change after a failover). */
  masters(): Promise<ClusterNodeAddress[]>;
  /** The nodes that are replicas now, each with the port of its master. */
  replicas(): Promise<Array<ClusterNodeAddress & { masterPort: number }>>;
  /** The master that serves `slot` now. */
  masterOfSlot(slot: number): Promise<ClusterNodeAddress>;
  /** Kills one node (SIGKILL by default) and resolves once its process has exited. Local clusters only. */
  killNode(port: number, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a killed node again on the same port and directory (it rejoins from its nodes.conf). Local clusters only. */
  restartNode(port: number): Promise<void>;
  /** Resolves when every live node reports `cluster_state:ok`, all slots are covered and every replica is linked. */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  /** Kills every node and removes their directories (no-op for an existing cluster). */
  stop(): Promise<void>;
}

export const NO_REDIS_CLUSTER_MESSAGE = [
  'The Redis Cluster tests need `redis-server` and `redis-cli` (7.0 or newer) on PATH, or an existing cluster:',
  '  - install them: `sudo apt-get install redis-server redis-tools` (Debian/Ubuntu) or `brew install redis` (macOS);',
  '  - or set REDIS_CLUSTER_NODES=host:port,host:port,... to the nodes of a cluster you run (tests write keys under their own prefixes).',
].join('\n');

export function hasRedisClusterBinaries(): boolean {
  return hasRedisServerBinary() && spawnSync('redis-cli', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Parses `host:port,host:port` (as in `REDIS_CLUSTER_NODES`). */
export function parseClusterNodes(list: string): ClusterNodeAddress[] {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const at = entry.lastIndexOf(':');
      const port = Number(entry.slice(at + 1));
      if (at <= 0 || !Number.isInteger(port) || port <= 0) throw new Error(`Not a host:port cluster node: "${entry}"`);
      return { host: entry.slice(0, at), port };
    });
}

export function formatClusterNodes(nodes: readonly ClusterNodeAddress[]): string {
  return nodes.map((n) => `${n.host}:${n.port}`).join(',');
}

/**
 * Starts `masters × (1 + replicasPerMaster)` nodes on free loopback ports, joins them with
 * `redis-cli --cluster create … --cluster-replicas R --cluster-yes`, and resolves once the cluster
 * is healthy. Fails with {@link NO_REDIS_CLUSTER_MESSAGE} when the binaries are missing.
 *
 * @example
 * const cluster = await startLocalRedisCluster({ masters: 3, replicasPerMaster: 1 });
 * const client = new Cluster([...cluster.nodes]);
 * // …
 * await cluster.stop();
 */
export async function startLocalRedisCluster(options: LocalRedisClusterOptions = {}): Promise<LocalRedisCluster> {
  if (!hasRedisClusterBinaries()) throw new Error(NO_REDIS_CLUSTER_MESSAGE);
  const masters = options.masters ?? 3;
  const replicasPerMaster = options.replicasPerMaster ?? 1;
  if (masters < 3) throw new Error('A Redis Cluster needs at least 3 masters.');
  const nodeArgs = [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    'nodes.conf',
    '--cluster-node-timeout',
    String(options.nodeTimeoutMs ?? 2000),
    // A replica may always take over, however long it was cut off: failover tests kill nodes at will.
    '--cluster-replica-validity-factor',
    '0',
    '--appendonly',
    'yes',
    '--save',
    '',
    // Start replication at once, and on SIGTERM do not wait for replicas that are being stopped too.
    '--repl-diskless-sync-delay',
    '0',
    '--shutdown-timeout',
    '0',
    ...(options.args ?? []),
  ];
  const servers = new Map<number, LocalRedisServer>();
  try {
    const started = await Promise.all(Array.from({ length: masters * (1 + replicasPerMaster) }, () => startClusterNode(nodeArgs)));
    for (const server of started) servers.set(server.port, server);
    const ports = started.map((s) => s.port);
    const create = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicasPerMaster), '--cluster-yes'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (create.status !== 0) {
      throw new Error(`redis-cli --cluster create failed (${create.status}):\n${create.stdout}\n${create.stderr}`);
    }
    const cluster = makeCluster(
      ports.map((port) => ({ host: '127.0.0.1', port })),
      'redis-server',
      servers,
      masters * (1 + replicasPerMaster),
    );
    await cluster.waitUntilHealthy(30_000);
    return cluster;
  } catch (error) {
    await Promise.all([...servers.values()].map((s) => s.stop()));
    throw error;
  }
}

/**
 * The cluster named by `REDIS_CLUSTER_NODES` when set (left running on `stop()`), else a new local one.
 */
export async function provideRedisCluster(options: LocalRedisClusterOptions = {}): Promise<LocalRedisCluster> {
  const fromEnv = process.env.REDIS_CLUSTER_NODES;
  if (fromEnv) {
    const cluster = makeCluster(parseClusterNodes(fromEnv), 'REDIS_CLUSTER_NODES', new Map(), undefined);
    return cluster;
  }
  return startLocalRedisCluster(options);
}

/** A node with its own cluster bus port: `port + 10000` overflows for the high ephemeral ports. */
async function startClusterNode(args: string[]): Promise<LocalRedisServer> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await findFreePort();
    let busPort = await findFreePort();
    while (busPort === port) busPort = await findFreePort();
    try {
      return await startLocalRedisServer({ port, args: [...args, '--cluster-port', String(busPort)] });
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

function makeCluster(
  nodes: ClusterNodeAddress[],
  source: LocalRedisCluster['source'],
  servers: Map<number, LocalRedisServer>,
  expectedNodes: number | undefined,
): LocalRedisCluster {
  const local = (port: number): LocalRedisServer => {
    const server = servers.get(port);
    if (!server) throw new Error(`Node ${port} is not a node this process started (external clusters cannot be killed).`);
    return server;
  };
  const isAlive = (port: number): boolean => {
    const server = servers.get(port);
    if (!server) return true;
    return server.process.exitCode === null && server.process.signalCode === null;
  };
  const liveNodes = () => nodes.filter((n) => isAlive(n.port));

  const topology = async () => {
    let lastError: unknown;
    for (const node of liveNodes()) {
      try {
        return parseClusterNodesReply(String(await nodeCommand(node, 'cluster', 'nodes')));
      } catch (error) {
        lastError = error;
      }
    }
    throw new Error(`No cluster node answers: ${(lastError as Error)?.message}`);
  };

  return {
    nodes,
    source,
    async masters() {
      const entries = await topology();
      return entries.filter((e) => e.role === 'master' && !e.failed).map((e) => ({ host: e.host, port: e.port }));
    },
    async replicas() {
      const entries = await topology();
      const portOfId = new Map(entries.map((e) => [e.id, e.port]));
      return entries
        .filter((e) => e.role === 'slave' && !e.failed)
        .map((e) => ({ host: e.host, port: e.port, masterPort: portOfId.get(e.masterId ?? '') ?? -1 }));
    },
    async masterOfSlot(slot) {
      const entries = await topology();
      const owner = entries.find((e) => e.role === 'master' && !e.failed && e.slots.some(([a, b]) => slot >= a && slot <= b));
      if (!owner) throw new Error(`No master serves slot ${slot}`);
      return { host: owner.host, port: owner.port };
    },
    async killNode(port, signal = 'SIGKILL') {
      const child = local(port).process;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill(signal);
      await exited;
    },
    async restartNode(port) {
      // `restart` stops the (already dead) process, then launches the same port and directory again.
      await local(port).restart({ signal: 'SIGKILL' });
    },
    async waitUntilHealthy(timeoutMs = 30_000) {
      const deadline = performance.now() + timeoutMs;
      let reason: string;
      for (;;) {
        try {
          reason = await unhealthyReason(liveNodes(), expectedNodes);
          if (!reason) return;
        } catch (error) {
          reason = (error as Error).message;
        }
        if (performance.now() > deadline) throw new Error(`Redis Cluster not healthy within ${timeoutMs} ms: ${reason}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      await Promise.all([...servers.values()].map((s) => s.stop()));
      servers.clear();
    },
  };
}

/** '' when healthy, else why not. */
async function unhealthyReason(nodes: ClusterNodeAddress[], expectedNodes: number | undefined): Promise<string> {
  for (const node of nodes) {
    const info = String(await nodeCommand(node, 'cluster', 'info'));
    if (!/cluster_state:ok/.test(info)) return `${node.port}: cluster_state not ok`;
    if (!/cluster_slots_ok:16384/.test(info)) return `${node.port}: not all slots ok`;
    const known = Number(/cluster_known_nodes:(\d+)/.exec(info)?.[1]);
    if (expectedNodes !== undefined && known < expectedNodes) return `${node.port}: knows ${known} of ${expectedNodes} nodes`;
    const replication = String(await nodeCommand(node, 'info', 'replication'));
    if (/role:slave/.test(replication) && !/master_link_status:up/.test(replication)) return `${node.port}: replica link down`;
    // Each node's own view must match: a node that has not heard of a failover yet still routes to the dead master.
    const entries = parseClusterNodesReply(String(await nodeCommand(node, 'cluster', 'nodes')));
    const bad = entries.find((e) => e.failed && e.role === 'master' && e.slots.length > 0);
    if (bad) return `${node.port}: sees failed master ${bad.port} still owning slots`;
  }
  return '';
}

interface NodeEntry {
  id: string;
  host: string;
  port: number;
  role: 'master' | 'slave';
  masterId?: string;
  failed: boolean;
  slots: Array<[number, number]>;
}

function parseClusterNodesReply(reply: string): NodeEntry[] {
  return reply
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [id, address, flags, masterId, , , , , ...slots] = line.split(' ');
      const hostPort = address.split('@')[0];
      const at = hostPort.lastIndexOf(':');
      const flagList = flags.split(',');
      return {
        id,
        host: hostPort.slice(0, at) || '127.0.0.1',
        port: Number(hostPort.slice(at + 1)),
        role: flagList.includes('master') ? 'master' : 'slave',
        masterId: masterId === '-' ? undefined : masterId,
        failed: flagList.includes('fail') || flagList.includes('fail?') || flagList.includes('noaddr'),
        slots: slots
          .filter((s) => !s.startsWith('['))
          .map((s) => {
            const [a, b] = s.split('-').map(Number);
            return [a, b ?? a] as [number, number];
          }),
      } satisfies NodeEntry;
    });
}

/** One command on one node over a short-lived connection (no cluster redirection). */
async function nodeCommand(node: ClusterNodeAddress, command: string, ...args: string[]): Promise<unknown> {
  const client = new Redis({
    host: node.host,
    port: node.port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2000,
    enableOfflineQueue: true,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(command, ...args);
  } finally {
    client.disconnect();
  }
}
