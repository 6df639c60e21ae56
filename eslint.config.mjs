// ESLint's flat config: the recommended rules of ESLint and typescript-eslint over every source
// file of the repository (npm run lint; CI runs it).
import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      'dist/**',
      'dist-sample/**',
      'coverage/**',
      'test-artifacts/**',
      '.cache/**',
      'docs/**',
      'etc/**',
      '.tmp/**',
      '**/*.embedded.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { '@stylistic': stylistic },
    rules: {
      // Prettier wraps code at 140 columns; this also holds strings, comments and templates to it.
      '@stylistic/max-len': ['error', { code: 140, ignoreUrls: true }],
      // A destructuring with one variable reassigned stays one `let`.
      'prefer-const': ['error', { destructuring: 'all' }],
      // A leading underscore names what is there for its place only (a parameter before a used one,
      // a part destructured away).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // A decorated method's parameters are named for its key template and signature even where the
    // body does not read them.
    // Tests read HTTP and JSON bodies as they come.
    files: ['test/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { args: 'none', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Stand-ins for the reader's own app in the docs' examples: anything goes.
    files: ['tools/docs-examples/prelude.d.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-empty-object-type': 'off' },
  },
  {
    // Node scripts, in ESM or CommonJS.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: { ...globals.node } },
  },
);
