import { Client } from 'pg';
import { startSampleInstance, stopSampleInstance, type SampleInstance } from '../../../sample-app/demo/sample-instances.js';
import { SCHEMA } from '../../../sample-app/src/database/schema.js';
import { startLocalPostgres } from '../../support/postgres.js';
import { testRedisUrl } from '../../support/test-app.js';
import { SAMPLE_APP_MAIN } from './sample-app-main.js';

/** Instances (processes) of the sample service on the run's Redis and one PostgreSQL database of their own. */
export interface SampleInstancesOnPostgres {
  readonly instances: SampleInstance[];
  /** SIGKILLs the instances, then stops the database. */
  stop(): Promise<void>;
}

/**
 * Starts a PostgreSQL database, creates the sample's schema in it first (instances creating it at once
 * can collide in PostgreSQL's catalog), then the instances `names` with `env` beside REDIS_URL and
 * DATABASE_URL. When one fails to start, what started is stopped and its error thrown.
 */
export async function startSampleInstancesOnPostgres(
  names: readonly string[],
  env: Record<string, string>,
): Promise<SampleInstancesOnPostgres> {
  const postgres = await startLocalPostgres();
  let instances: SampleInstance[] = [];
  const stop = async () => {
    await Promise.all(instances.map((instance) => stopSampleInstance(instance, 'SIGKILL')));
    await postgres.stop();
  };
  try {
    const client = new Client({ connectionString: postgres.url });
    await client.connect();
    await client.query(SCHEMA);
    await client.end();
    const all = { REDIS_URL: testRedisUrl(), DATABASE_URL: postgres.url, ...env };
    const started = await Promise.allSettled(names.map((name) => startSampleInstance(SAMPLE_APP_MAIN, name, all, 150_000)));
    instances = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (error) {
    await stop();
    throw error;
  }
  return { instances, stop };
}
