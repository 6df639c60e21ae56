import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from '@jest/globals';

/**
 * The user's documentation, as the registry and GitHub show it: the README stays short and its links are
 * absolute (the registry page has no repository files around it), every link into the repository from the
 * README, CONTRIBUTING.md, sample-app/README.md and docs/*.md reaches an existing file and, where it names
 * one, an existing heading; every module option has a row in an options table; the package ships its LICENSE.
 */
const ROOT = process.cwd();
const REPOSITORY = 'https://github.com/nestjs-redis-lock/nestjs-redis-lock';
const MAX_README_LINES = 350;

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const docPages = () =>
  readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
const checkedPages = () => ['README.md', 'CONTRIBUTING.md', 'sample-app/README.md', ...docPages()];

/** Markdown without fenced code blocks (their lines kept, empty): what can hold a heading or a table row. */
function withoutFences(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ''));
}

/** Markdown without code blocks and code spans: what can hold a link. Line numbers are kept. */
function proseOf(markdown: string): string {
  // A code span never crosses a blank line; a stray backtick is left alone.
  return withoutFences(markdown).replace(/(`+)[\s\S]*?\1/g, (span) => (span.includes('\n\n') ? span : span.replace(/[^\n]/g, '')));
}

/** Every `[text](target)` and `![alt](target)` of a page, with the line it is on. */
function linksOf(markdown: string): Array<{ target: string; line: number }> {
  const prose = proseOf(markdown);
  const links: Array<{ target: string; line: number }> = [];
  for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    links.push({ target: match[1], line: prose.slice(0, match.index).split('\n').length });
  }
  return links;
}

/** GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as '-', repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, text] of withoutFences(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const base = text
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[`*~]/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The repository path (and anchor) a link points at, or undefined for a link elsewhere. */
function repositoryTarget(page: string, target: string): { path: string; anchor?: string } | undefined {
  let rest: string;
  if (target.startsWith(`${REPOSITORY}/blob/main/`) || target.startsWith(`${REPOSITORY}/tree/main/`)) {
    rest = target.slice(`${REPOSITORY}/blob/main/`.length);
  } else if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
    return undefined; // another site, mailto:, …
  } else if (target.startsWith('#')) {
    return { path: page, anchor: decodeURIComponent(target.slice(1)) };
  } else {
    rest = relative(ROOT, join(ROOT, dirname(page), target));
  }
  const [withoutQuery] = rest.split('?');
  const [path, anchor] = withoutQuery.split('#');
  return { path: normalize(decodeURIComponent(path)).replace(/\/$/, ''), anchor: anchor && decodeURIComponent(anchor) };
}

describe('the README', () => {
  const readme = read('README.md');

  it(`is at most ${MAX_README_LINES} lines`, () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(MAX_README_LINES);
  });

  it('links only with absolute addresses, so that its links work on the registry page', () => {
    const relativeLinks = linksOf(readme).filter((link) => !/^https:\/\//.test(link.target));
    expect(relativeLinks).toEqual([]);
  });

  it('keeps the install line and the two commands of the repository', () => {
    expect(readme).toContain('npm install nestjs-redis-lock ioredis');
    expect(readme).toMatch(/^npm run demo\b/m);
    expect(readme).toMatch(/^npm test\b/m);
  });

  it('shows the testing example that test/testing/readme-example.spec.ts runs, verbatim but for the import path', () => {
    const spec = read('test/testing/readme-example.spec.ts');
    const example = spec.slice(spec.indexOf("import type { TestingModule } from '@nestjs/testing';")).trimEnd();
    const shown = example.replace(
      "from './fixtures/readme-app.js';",
      'from \'./app.module\'; // an ES module app ("type": "module"): \'./app.module.js\'',
    );
    expect(shown).not.toBe(example);
    expect(readme).toContain(`\`\`\`ts\n${shown}\n\`\`\``);
  });

  it('shows, as its complete module, the app that example tests (test/testing/fixtures/readme-app.ts)', () => {
    const fixture = read('test/testing/fixtures/readme-app.ts');
    const app = fixture.slice(fixture.indexOf('import { Controller, Injectable, Module'));
    expect(readme).toContain(`\`\`\`ts\n${app}\`\`\``);
  });
});

describe('links into the repository', () => {
  it('every one reaches an existing file, and an existing heading where it names one', () => {
    const broken: string[] = [];
    const anchorCache = new Map<string, Set<string>>();
    for (const page of checkedPages()) {
      for (const { target, line } of linksOf(read(page))) {
        const resolved = repositoryTarget(page, target);
        if (!resolved) continue;
        const file = join(ROOT, resolved.path);
        if (resolved.path.startsWith('..') || !existsSync(file)) {
          broken.push(`${page}:${line} ${target}: no file ${resolved.path}`);
          continue;
        }
        if (!resolved.anchor || !statSync(file).isFile() || !resolved.path.endsWith('.md')) continue;
        let anchors = anchorCache.get(resolved.path);
        if (!anchors) anchorCache.set(resolved.path, (anchors = anchorsOf(read(resolved.path))));
        if (!anchors.has(resolved.anchor)) broken.push(`${page}:${line} ${target}: no heading #${resolved.anchor} in ${resolved.path}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the checker finds links and anchors the way GitHub renders them', () => {
    expect(anchorsOf('## `@WithLock`: lock a method\n### Contended (one hot key) — not worse\n## Errors\n## Errors')).toEqual(
      new Set(['withlock-lock-a-method', 'contended-one-hot-key--not-worse', 'errors', 'errors-1']),
    );
    expect(linksOf('see [a](docs/a.md#x) and `[b](c.md)`\n```\n[d](e.md)\n```\n![i](https://x/y.png?raw=true)')).toEqual([
      { target: 'docs/a.md#x', line: 1 },
      { target: 'https://x/y.png?raw=true', line: 5 },
    ]);
    expect(repositoryTarget('docs/locks.md', `${REPOSITORY}/blob/main/docs/images/dashboard.png?raw=true`)).toEqual({
      path: 'docs/images/dashboard.png',
      anchor: undefined,
    });
    expect(repositoryTarget('docs/locks.md', 'outbox.md#setup')).toEqual({ path: 'docs/outbox.md', anchor: 'setup' });
  });
});

describe('the options tables', () => {
  /** Where each options interface sits in `RedisLockModule.forRoot({ … })`. */
  const PREFIXES: Record<string, string> = {
    RedisLockModuleOptions: '',
    LockDefaults: 'lock.',
    SyncReplicasOptions: 'lock.syncReplicas.',
    RedlockOptions: 'redlock.',
    DelayQueueDefaults: 'delayQueue.',
    BackoffOptions: 'delayQueue.backoff.',
    RetentionOptions: 'delayQueue.retention.',
    OutboxRelayOptions: 'delayQueue.outboxRelay.',
    DelayQueueTopicOptions: 'delayQueue.topics.<topic>.',
  };

  it('name every option the module accepts, in the README or a docs page', () => {
    const source = read('lib/core/options/redis-lock-module-options.interface.ts');
    const options = ['isGlobal'];
    for (const [, name, body] of source.matchAll(/^export interface (\w+)[^{]*\{\n([\s\S]*?)^\}/gm)) {
      expect({ interface: name, mapped: name in PREFIXES }).toEqual({ interface: name, mapped: true });
      for (const [, key, type] of body.matchAll(/^ {2}(\w+)\??:\s*([^;]+);/gm)) {
        // A section whose type is another options interface is covered by that interface's rows.
        const section = Object.keys(PREFIXES).some((other) => other !== name && new RegExp(`\\b${other}\\b`).test(type));
        if (!section || key === 'syncReplicas' || key === 'topics') options.push(`${PREFIXES[name]}${key}`);
      }
    }
    expect(options).toEqual(
      expect.arrayContaining(['keyPrefix', 'lock.syncReplicas', 'delayQueue.outboxRelay.claimLease', 'redlock.clients']),
    );

    const tabled = new Set<string>();
    for (const page of ['README.md', ...docPages()]) {
      for (const [, firstCell] of withoutFences(read(page)).matchAll(/^\|([^|\n]*)\|/gm)) {
        for (const [, code] of firstCell.matchAll(/`([^`]+)`/g)) tabled.add(code);
      }
    }
    expect(options.filter((option) => !tabled.has(option))).toEqual([]);
  });
});

describe('the package', () => {
  it('declares pg, which the PostgreSQL outbox runs on, as an optional peer, and docs/outbox.md says to install it', () => {
    const pkg = JSON.parse(read('package.json')) as {
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    expect(pkg.peerDependencies.pg).toMatch(/^\^8\./);
    expect(pkg.peerDependenciesMeta.pg).toEqual({ optional: true });
    const outbox = read('docs/outbox.md');
    expect(outbox).not.toMatch(/install nothing more/i);
    expect(outbox).toContain('npm install pg');
  });

  it('ships the LICENSE file', () => {
    const pkg = JSON.parse(read('package.json')) as { files: string[]; license: string; repository: { url: string } };
    expect(pkg.files).toEqual(expect.arrayContaining(['LICENSE', 'README.md']));
    expect(pkg.license).toBe('MIT');
    expect(pkg.repository.url).toBe(`git+${REPOSITORY}.git`);
    expect(read('LICENSE')).toMatch(/^MIT License\n\nCopyright \(c\) 2026 nestjs-redis-lock contributors\n/);
  });
});
