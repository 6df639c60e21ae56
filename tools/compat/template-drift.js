/**
 * `npm run test:compat -- --check-templates`: are the apps under tools/compat/apps/ still what
 * `nest new` generates? Packs the newest @nestjs/schematics of each major from the registry, renders
 * its application template with the CLI's defaults, and compares it with our copies, allowing only
 * the lane's own changes: extra dependencies and `skipLibCheck: false`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** Our app, and where its files come from: the schematics major and its template folder. */
const TEMPLATES = [
  { app: 'nest12-cjs', schematics: '@nestjs/schematics@12', folder: 'ts' },
  { app: 'nest12-esm', schematics: '@nestjs/schematics@12', folder: 'ts-esm' },
  { app: 'nest11-cjs', schematics: '@nestjs/schematics@11', folder: 'ts' },
  { app: 'nest12-typeorm1', schematics: '@nestjs/schematics@12', folder: 'ts' },
  { app: 'nest12-drivers', schematics: '@nestjs/schematics@12', folder: 'ts' },
];

/** Files copied verbatim from the template (after rendering). */
const VERBATIM = [
  'tsconfig.build.json',
  'nest-cli.json',
  'src/app.controller.ts',
  'src/app.module.ts',
  'src/app.service.ts',
  'src/main.ts',
];

/**
 * Returns one line per difference (empty: every app matches its template). `env` is the npm
 * environment of the lane; `workRoot` a directory for the downloaded packages.
 */
export function templateDrift({ appsDir, workRoot, env }) {
  const problems = [];
  const unpacked = new Map();
  const scratch = mkdtempSync(join(workRoot, 'schematics-'));
  try {
    for (const { app, schematics, folder } of TEMPLATES) {
      if (!unpacked.has(schematics)) unpacked.set(schematics, unpack(schematics, scratch, env));
      const { root, version } = unpacked.get(schematics);
      const templateDir = join(root, 'dist', 'lib', 'application', 'files', folder);
      const schema = JSON.parse(readFileSync(join(root, 'dist', 'lib', 'application', 'schema.json'), 'utf8'));
      const values = {
        name: app,
        version: '0.0.1',
        description: '',
        author: '',
        strict: schema.properties.strict.default,
        specFileSuffix: 'spec',
      };
      const template = (file) => render(readFileSync(join(templateDir, file), 'utf8'), values);
      const ours = (file) => readFileSync(join(appsDir, app, file), 'utf8');
      const where = `${app} (@nestjs/schematics ${version}, files/${folder})`;

      for (const file of VERBATIM) {
        if (template(file) !== ours(file)) problems.push(`${where}: ${file} differs from the template`);
      }

      const expectedTsconfig = JSON.parse(template('tsconfig.json'));
      expectedTsconfig.compilerOptions.skipLibCheck = false;
      if (JSON.stringify(parseJsonc(ours('tsconfig.json'))) !== JSON.stringify(expectedTsconfig)) {
        problems.push(`${where}: tsconfig.json differs from the template (beyond skipLibCheck: false)`);
      }

      const expected = JSON.parse(template('package.json'));
      const actual = JSON.parse(ours('package.json'));
      for (const field of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
        if (field === 'dependencies') continue;
        if (JSON.stringify(expected[field]) !== JSON.stringify(actual[field])) problems.push(`${where}: package.json "${field}" differs`);
      }
      for (const [name, range] of Object.entries(expected.dependencies ?? {})) {
        if (actual.dependencies?.[name] !== range) {
          problems.push(`${where}: dependency ${name} is ${range} in the template, ${actual.dependencies?.[name] ?? 'absent'} here`);
        }
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return problems;
}

function unpack(spec, scratch, env) {
  const packed = spawnSync('npm', ['pack', spec, '--json', '--pack-destination', scratch], { cwd: scratch, env, encoding: 'utf8' });
  if (packed.status !== 0) throw new Error(`npm pack ${spec} failed:\n${packed.stderr}`);
  const [{ filename, version }] = JSON.parse(packed.stdout.slice(packed.stdout.search(/^\[/m)));
  const root = join(scratch, filename.replace(/\.tgz$/, ''));
  const untar = spawnSync('tar', ['-xzf', join(scratch, filename), '-C', scratch], { encoding: 'utf8' });
  if (untar.status !== 0) throw new Error(`could not unpack ${filename}: ${untar.stderr}`);
  spawnSync('mv', [join(scratch, 'package'), root]);
  return { root, version };
}

/** The subset of the schematics' EJS-style templates the application files use; `@nestjs/observe` off. */
function render(text, values) {
  let out = text.replace(/<% if \(observe\) \{ %>[\s\S]*?<% \} %>/g, '');
  out = out.replace(/<%= (\w+) %>/g, (_, name) => {
    if (!(name in values)) throw new Error(`template placeholder ${name} has no value`);
    return String(values[name]);
  });
  if (out.includes('<%')) throw new Error(`template syntax not understood: ${out.slice(out.indexOf('<%'), out.indexOf('<%') + 60)}`);
  return out;
}

/** tsconfig.json allows `//` comment lines; ours has one. */
function parseJsonc(text) {
  return JSON.parse(
    text
      .split('\n')
      .filter((line) => !line.trim().startsWith('//'))
      .join('\n'),
  );
}
