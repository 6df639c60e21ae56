import { DataSource } from 'typeorm';
import { startLocalPostgres, type LocalPostgres } from './postgres.js';

/** A TypeORM DataSource (not yet initialised) on `server`, with a pool of `poolSize` connections. */
export function typeOrmDataSource(server: LocalPostgres, poolSize = 4): DataSource {
  return new DataSource({
    type: 'postgres',
    host: server.host,
    port: server.port,
    username: server.user,
    database: server.database,
    poolSize,
  });
}

/** A PostgreSQL server of the file's own and an initialised TypeORM DataSource on it. */
export interface PostgresWithDataSource {
  readonly postgres: LocalPostgres;
  readonly dataSource: DataSource;
  /** Destroys the DataSource, then stops the server. */
  stop(): Promise<void>;
}

/**
 * Starts a PostgreSQL server and initialises a DataSource on it, then runs `setUp` (the spec's
 * tables). `register` is given the DataSource before it initialises and returns the one to use
 * (typeorm-transactional's `addTransactionalDataSource`). When a step fails, what started is stopped.
 */
export async function startPostgresWithDataSource(
  setUp: (dataSource: DataSource) => Promise<unknown>,
  register: (dataSource: DataSource) => DataSource = (dataSource) => dataSource,
): Promise<PostgresWithDataSource> {
  const postgres = await startLocalPostgres();
  const dataSource = register(typeOrmDataSource(postgres));
  const stop = async () => {
    if (dataSource.isInitialized) await dataSource.destroy();
    await postgres.stop();
  };
  try {
    await dataSource.initialize();
    await setUp(dataSource);
  } catch (error) {
    await stop();
    throw error;
  }
  return { postgres, dataSource, stop };
}
