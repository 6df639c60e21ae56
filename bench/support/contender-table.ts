import { markdownTable } from './markdown-table.js';
import type { CpuPerJob } from './usage-meter.js';

/** A column of a contenders table: how to read it from a result, and which way is better. */
export interface Column<R> {
  readonly header: string;
  readonly digits: number;
  /** 'higher' or 'lower' is better: the ratio rows then read > 1 where ours is better. 'none': no ratio. */
  readonly better: 'higher' | 'lower' | 'none';
  value(result: R): number | undefined;
}

export const formatNumber = (n: number | undefined, digits = 0): string => (n === undefined || Number.isNaN(n) ? '–' : n.toFixed(digits));

/**
 * One row per contender, then one "ours vs <peer>" row per peer with ratios > 1 where ours is better
 * (ours ÷ peer for 'higher', peer ÷ ours for 'lower'). `ours` is the result the ratios are taken for.
 */
export function contenderTable<R extends { readonly name: string }>(
  results: readonly R[],
  ours: R | undefined,
  columns: readonly Column<R>[],
): string {
  const rows = results.map((r) => [r.name, ...columns.map((c) => formatNumber(c.value(r), c.digits))]);
  const peers = results.filter((r) => r !== ours);
  const ratioRows = ours
    ? peers.map((peer) => [
        `ours vs ${peer.name}`,
        ...columns.map((c) => {
          const o = c.value(ours);
          const p = c.value(peer);
          if (c.better === 'none' || o === undefined || p === undefined) return '';
          const ratio = c.better === 'higher' ? o / p : p / o;
          return Number.isFinite(ratio) && ratio > 0 ? `${ratio.toFixed(2)}×` : '';
        }),
      ])
    : [];
  return markdownTable(['library', ...columns.map((c) => c.header)], [...rows, ...ratioRows], ['l', ...columns.map(() => 'r' as const)]);
}

/**
 * The CPU columns of a contenders table, from a result's `cpuPerJob` figures: the client side (`client`
 * says what it covers), the Redis server, the sum of both (`total`), then Redis commands per job.
 */
export function cpuColumns<R extends Partial<CpuPerJob>>(labels: { client: string; total: string }, digits: number): Column<R>[] {
  return [
    { header: `${labels.client} µs/job`, digits, better: 'lower', value: (r) => r.clientMicros },
    { header: 'Redis CPU µs/job', digits, better: 'lower', value: (r) => r.redisMicros },
    {
      header: `${labels.total} µs/job`,
      digits,
      better: 'lower',
      value: (r) => (r.clientMicros === undefined ? undefined : r.clientMicros + (r.redisMicros ?? 0)),
    },
    { header: 'Redis commands/job', digits: 1, better: 'lower', value: (r) => r.redisCommands },
  ];
}
