import { startLocalPostgres, type LocalPostgres } from './postgres.js';
import { useResource } from './use-resource.js';

/** A private PostgreSQL server for a describe block (`useResource`): started before its tests, stopped after them. */
export function useLocalPostgres(): LocalPostgres {
  return useResource('the PostgreSQL server', startLocalPostgres, (server) => server.stop());
}
