import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { SAMPLE_CONFIG, type SampleConfig } from '../config/sample-config.js';
import { Database } from './database.js';
import { PgliteDatabase } from './pglite-database.js';
import { PostgresDatabase } from './postgres-database.js';
import { SCHEMA } from './schema.js';

/** Provides `Database`: PostgreSQL when DATABASE_URL is set, an embedded PGlite otherwise. */
@Global()
@Module({
  providers: [
    {
      provide: Database,
      inject: [SAMPLE_CONFIG],
      useFactory: async (config: SampleConfig): Promise<Database> => {
        if (config.databaseUrl) {
          const db = new PostgresDatabase(config.databaseUrl);
          await db.query(SCHEMA);
          return db;
        }
        const db = await PgliteDatabase.open();
        await db.exec(SCHEMA);
        return db;
      },
    },
  ],
  exports: [Database],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@Inject(Database) private readonly db: Database) {}

  async onApplicationShutdown(): Promise<void> {
    await this.db.close();
  }
}
