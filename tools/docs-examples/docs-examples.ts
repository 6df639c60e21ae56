/**
 * Type-checks the ```ts blocks of README.md and docs/*.md against lib/ (through the package's own
 * import paths, tsconfig.json's `paths`), as a user would paste them: each block is a module of its
 * own, with the declarations of tools/docs-examples/prelude.d.ts in scope (the `locks`,
 * `delayQueue`, `orders`, … a block assumes). Run by test/unit/docs-examples.spec.ts.
 *
 * A block is compiled as a module when it imports, exports or declares a class; else as the body of
 * an async method (statements: `await`, `this.locks`), or, when that does not parse, as the members
 * of a class (decorated methods). A block whose first line is `// not checked: <why>` is left out.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/** One ```ts block of a page. */
export interface DocExample {
  readonly page: string;
  /** Line of the block's first code line in the page (1-based): the block's name in reports. */
  readonly line: number;
  readonly code: string;
}

/** A compiler error in a block, located in the page. */
export interface DocExampleError {
  readonly page: string;
  readonly line: number;
  readonly message: string;
}

/** The ```ts (or ```typescript) blocks of `markdown`, with the line each starts on. */
export function tsBlocksOf(page: string, markdown: string): DocExample[] {
  const blocks: DocExample[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(```+|~~~+)\s*(ts|typescript)\b/.exec(lines[i]);
    if (!open) continue;
    const fence = open[2];
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !lines[j].trimStart().startsWith(fence); j++) body.push(lines[j].slice(open[1].length));
    blocks.push({ page, line: i + 2, code: body.join('\n') });
    i = j;
  }
  return blocks;
}

/** The pages whose blocks are checked: README.md and docs/*.md. */
export function documentedPages(root: string): string[] {
  return [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .sort()
      .map((name) => `docs/${name}`),
  ];
}

const NOT_CHECKED = /^\s*\/\/\s*not checked:\s*\S/;

/** Why a block is not checked, when its first line says so. */
export function skippedReason(example: DocExample): string | undefined {
  const first = example.code.split('\n')[0];
  return NOT_CHECKED.test(first) ? first.replace(/^\s*\/\/\s*not checked:\s*/, '') : undefined;
}

/** Type-checks every block of `pages` (default: `documentedPages`); resolves to the errors, by page and line. */
export function checkDocExamples(
  root: string,
  pages = documentedPages(root),
): { checked: number; skipped: number; errors: DocExampleError[] } {
  const examples = pages.flatMap((page) => tsBlocksOf(page, readFileSync(join(root, page), 'utf8')));
  const configPath = join(root, 'tsconfig.json');
  const config = ts.getParsedCommandLineOfConfigFile(configPath, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, declaration: false, sourceMap: false, noUnusedLocals: false };
  const prelude = join(root, 'tools', 'docs-examples', 'prelude.d.ts');
  const files = new Map<string, { example: DocExample; offset: number; text: string }>();
  let skipped = 0;
  const autoImports = importableNames(root);
  examples.forEach((example, i) => {
    if (skippedReason(example) !== undefined) {
      skipped++;
      return;
    }
    const slug = example.page.replace(/[^A-Za-z0-9]+/g, '-');
    const name = join(root, 'tools', 'docs-examples', '.examples', `${slug}-${example.line}-${i}.ts`);
    const lines = example.code.split('\n');
    const { importLines, packageImports, appNames } = importsOf(example.code);
    // The block's imports move to the head; what it imports from the app's own files (`./app.module`)
    // is not here, so each such name stands for a value and a type of the app that fit any use.
    const own = [...packageImports, ...appNames.map((name) => `declare const ${name}: any; type ${name} = any;`)].join('\n').split('\n');
    const body = lines.map((l, i) => (importLines.has(i) ? '' : l));
    // What the block uses of the package and of Nest without importing it: the imports a reader adds.
    const declared = new Set(
      [...example.code.matchAll(/\b(?:class|interface|type|enum|const|let|var|function)\s+([A-Za-z_$][\w$]*)/g)].map((m) => m[1]),
    );
    for (const m of example.code.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}/g)) {
      for (const part of m[1].split(','))
        declared.add(
          part
            .trim()
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)
            .pop()!,
        );
    }
    const wanted = new Map<string, string[]>();
    for (const [, used] of example.code.matchAll(/(?<![.\w$])([A-Za-z_$][\w$]*)\b/g)) {
      const from = autoImports.get(used);
      if (!from || declared.has(used)) continue;
      declared.add(used);
      wanted.set(from, [...(wanted.get(from) ?? []), used]);
    }
    const mode = wrapMode(example.code);
    // A whole module (a class, a file) imports what it uses, as the file a reader saves must; a
    // fragment (statements, members) gets the imports its surrounding file would have.
    const added = mode === 'module' ? [] : [...wanted].map(([from, names]) => `import { ${names.join(', ')} } from '${from}';`);
    const head = ['/// <reference path="../prelude.d.ts" />', 'export {};', ...added, ...own];
    const open =
      mode === 'module'
        ? []
        : mode === 'statements'
          ? ['async function example(this: ExampleThis) {']
          : ['class Example extends ExampleBase {'];
    const text = [...head, ...open, ...body, ...(mode === 'module' ? [] : ['}'])].join('\n');
    files.set(name, { example, offset: head.length + open.length, text });
  });
  const host = ts.createCompilerHost(options, true);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (file) => files.get(file)?.text ?? readFile(file);
  host.fileExists = (file) => files.has(file) || fileExists(file);
  host.getSourceFile = (file, language, onError, create) => {
    const virtual = files.get(file);
    return virtual ? ts.createSourceFile(file, virtual.text, language, true) : getSourceFile(file, language, onError, create);
  };
  const schedule = join(root, 'tools', 'docs-examples', 'nestjs-schedule.d.ts');
  const program = ts.createProgram({ rootNames: [prelude, schedule, ...files.keys()], options, host });
  const errors: DocExampleError[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const file = diagnostic.file?.fileName;
    const virtual = file === undefined ? undefined : files.get(file);
    if (!virtual) {
      errors.push({ page: file === undefined ? '(program)' : relative(root, file), line: 0, message: `TS${diagnostic.code}: ${message}` });
      continue;
    }
    const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    errors.push({
      page: virtual.example.page,
      line: virtual.example.line + Math.max(0, line - virtual.offset),
      message: `TS${diagnostic.code}: ${message}`,
    });
  }
  return { checked: files.size, skipped, errors };
}

/**
 * The import declarations of a block, whole (an import may span lines): the lines they take, the
 * text of those from packages, and the names imported from the app's own files (relative paths).
 */
export function importsOf(code: string): { importLines: Set<number>; packageImports: string[]; appNames: string[] } {
  const file = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const importLines = new Set<number>();
  const packageImports: string[] = [];
  const appNames: string[] = [];
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const first = file.getLineAndCharacterOfPosition(statement.getStart(file)).line;
    const last = file.getLineAndCharacterOfPosition(statement.getEnd()).line;
    for (let line = first; line <= last; line++) importLines.add(line);
    if (!statement.moduleSpecifier.text.startsWith('.')) {
      packageImports.push(statement.getText(file));
      continue;
    }
    const clause = statement.importClause;
    if (clause?.name) appNames.push(clause.name.text);
    if (clause?.namedBindings && ts.isNamedImports(clause.namedBindings))
      appNames.push(...clause.namedBindings.elements.map((e) => e.name.text));
  }
  return { importLines, packageImports, appNames };
}

/**
 * How a block is compiled: a whole `module` (it imports, exports or declares a class), `statements`
 * (the body of an async method of an object with the prelude's services, so `this.locks` and `await`
 * work), or a `class-body` (members of such a class: decorated methods, a constructor).
 */
export function wrapMode(code: string): 'module' | 'statements' | 'class-body' {
  if (/^(import|export)\s|^@\w+(\(|\s*$)[\s\S]*^(export\s+)?class\s|^(export\s+)?(abstract\s+)?class\s/m.test(code)) return 'module';
  const parses = (text: string) => {
    const file = ts.createSourceFile('probe.ts', text, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
    return ((file as unknown as { parseDiagnostics: readonly unknown[] }).parseDiagnostics ?? []).length === 0;
  };
  if (parses(`async function example() {\n${code}\n}`)) return 'statements';
  return 'class-body';
}

/** Names a block may use without importing them, and the module a reader imports each from. */
function importableNames(root: string): Map<string, string> {
  const names = new Map<string, string>();
  type Target = string | { types?: string; import?: { types?: string } };
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, Target> };
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    // The ES module build's declarations (`import` condition), or a flat `types`.
    const types = typeof target === 'string' ? undefined : (target.import?.types ?? target.types);
    if (!types) continue;
    const source = join(root, types.replace(/^\.\/dist\//, 'lib/').replace(/\.d\.ts$/, '.ts'));
    const specifier = subpath === '.' ? 'nestjs-redis-lock' : `nestjs-redis-lock/${subpath.slice(2)}`;
    let text: string;
    try {
      text = readFileSync(source, 'utf8');
    } catch {
      continue;
    }
    for (const m of text.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
      for (const part of m[1].split(',')) {
        const exported = part
          .trim()
          .replace(/^type\s+/, '')
          .split(/\s+as\s+/)
          .pop()!;
        if (exported && !names.has(exported)) names.set(exported, specifier);
      }
    }
    for (const m of text.matchAll(
      /export\s+(?:declare\s+)?(?:abstract\s+)?(?:class|function|const|interface|type)\s+([A-Za-z_$][\w$]*)/g,
    )) {
      if (!names.has(m[1])) names.set(m[1], specifier);
    }
  }
  for (const nest of [
    'Injectable',
    'Controller',
    'Module',
    'Get',
    'Post',
    'Put',
    'Delete',
    'Param',
    'Body',
    'Headers',
    'Inject',
    'HttpException',
    'UseInterceptors',
    'Logger',
    'OnModuleInit',
    'OnApplicationBootstrap',
    'OnModuleDestroy',
    'ConflictException',
    'Catch',
    'ArgumentsHost',
    'ExceptionFilter',
  ]) {
    names.set(nest, '@nestjs/common');
  }
  for (const nest of ['NestFactory', 'APP_INTERCEPTOR']) names.set(nest, '@nestjs/core');
  for (const nest of ['Cron', 'Interval']) names.set(nest, '@nestjs/schedule');
  for (const nest of ['Test', 'TestingModule']) names.set(nest, '@nestjs/testing');
  for (const pg of ['Pool', 'PoolClient']) names.set(pg, 'pg');
  return names;
}
