import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { describe, expect, it } from '@jest/globals';

/**
 * The floor plan of `lib/`, checked on every import (type-only imports included):
 *
 *   add-ons      observability/*, transaction-adapters, outbox (the PostgreSQL JobOutboxStore), testing
 *   module       lib/*.ts (RedisLockModule, index)
 *   above them   decorators, scheduling (work across instances: uses both engines)
 *   engines      lock, delay-queue   (never import each other)
 *   core         core/*              (imports nothing outside core)
 *
 * A folder imports only from its own layer's folder or from layers below it, and no two
 * folders (at any depth) import each other, directly or through others.
 */
const LIB = join(process.cwd(), 'lib');

const LAYERS: ReadonlyArray<{ layer: number; matches: (area: string) => boolean }> = [
  { layer: 0, matches: (area) => area.startsWith('core') },
  { layer: 1, matches: (area) => area === 'lock' || area === 'delay-queue' },
  { layer: 2, matches: (area) => area === 'decorators' || area === 'scheduling' },
  { layer: 3, matches: (area) => area === '.' },
  {
    layer: 4,
    matches: (area) => area.startsWith('observability/') || area === 'transaction-adapters' || area === 'outbox' || area === 'testing',
  },
];

interface Import {
  from: string;
  to: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function importsOf(file: string): Import[] {
  const source = readFileSync(file, 'utf8');
  const specifiers = [...source.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?['"](\.{1,2}\/[^'"]+)['"]/g)].map((match) => match[1]);
  return specifiers.map((specifier) => ({
    from: relative(LIB, file),
    to: normalize(join(relative(LIB, dirname(file)), specifier)).replace(/\.js$/, '.ts'),
  }));
}

/** `core/redis`, `lock`, `observability/dashboard`, `.` for the files at the top. */
function areaOf(path: string): string {
  const parts = path.split(sep);
  if (parts.length === 1) return '.';
  if ((parts[0] === 'core' || parts[0] === 'observability') && parts.length > 2) return `${parts[0]}/${parts[1]}`;
  return parts[0];
}

function layerOf(area: string): number {
  const found = LAYERS.find((candidate) => candidate.matches(area));
  if (!found) throw new Error(`lib/${area} has no place in the floor plan; add it to floor-plan.spec.ts`);
  return found.layer;
}

function cyclesBetween(edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    path.push(node);
    for (const next of edges.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, 'done');
  };
  for (const node of edges.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

const imports = sourceFiles(LIB).flatMap(importsOf);

/**
 * The floors of one engine's folder: each file at its top and each of its subfolders is one room; a
 * room stands one floor above the highest room it imports from the same folder (floor 1 imports none).
 */
function floorsOf(engine: string): number {
  const roomOf = (path: string): string => path.split(sep).slice(0, 2).join(sep);
  const below = new Map<string, Set<string>>();
  for (const { from, to } of imports) {
    if (areaOf(from) !== engine || areaOf(to) !== engine || roomOf(from) === roomOf(to)) continue;
    if (!below.has(roomOf(from))) below.set(roomOf(from), new Set());
    below.get(roomOf(from))!.add(roomOf(to));
  }
  const floors = new Map<string, number>();
  const floorOf = (room: string, path: readonly string[]): number => {
    if (path.includes(room)) throw new Error(`rooms of lib/${engine} import each other: ${[...path, room].join(' -> ')}`);
    if (!floors.has(room)) floors.set(room, 1 + Math.max(0, ...[...(below.get(room) ?? [])].map((next) => floorOf(next, [...path, room]))));
    return floors.get(room)!;
  };
  return Math.max(...[...below.keys()].map((room) => floorOf(room, [])));
}

describe('floor plan of lib/', () => {
  it('finds the imports it checks', () => {
    expect(imports.length).toBeGreaterThan(300);
  });

  it('imports only sideways within a folder or down to a lower layer', () => {
    const upward = imports
      .filter(({ from, to }) => areaOf(from) !== areaOf(to))
      .filter(({ from, to }) => layerOf(areaOf(to)) > layerOf(areaOf(from)))
      .map(({ from, to }) => `${from} -> ${to}`);
    expect(upward).toEqual([]);
  });

  it('keeps the two engines, lock and delay-queue, apart', () => {
    const across = imports
      .filter(({ from, to }) => new Set([areaOf(from), areaOf(to)]).size === 2)
      .filter(({ from, to }) => [areaOf(from), areaOf(to)].every((area) => area === 'lock' || area === 'delay-queue'))
      .map(({ from, to }) => `${from} -> ${to}`);
    expect(across).toEqual([]);
  });

  it('keeps lib/delay-queue within 7 floors (files at its top and its subfolders as rooms)', () => {
    expect(floorsOf('delay-queue')).toBeLessThanOrEqual(7);
  });

  it('has no import cycle between folders, at any depth', () => {
    const edges = new Map<string, Set<string>>();
    for (const { from, to } of imports) {
      const [fromDir, toDir] = [dirname(from), dirname(to)];
      if (fromDir === toDir) continue;
      if (!edges.has(fromDir)) edges.set(fromDir, new Set());
      edges.get(fromDir)!.add(toDir);
    }
    expect(cyclesBetween(edges).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });
});
