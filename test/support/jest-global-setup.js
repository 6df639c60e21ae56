/**
 * Jest's globalSetup runs in Jest's own process, outside its module registry, where Node resolves
 * imports natively: this registers tools/typescript-loader there, then runs global-setup.ts.
 */
import { register } from 'node:module';

register('../../tools/typescript-loader/hooks.js', import.meta.url);

export default async function jestGlobalSetup(...args) {
  const { default: globalSetup } = await import('./global-setup.ts');
  return globalSetup(...args);
}
