import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AppModule } from '../../../sample-app/src/app.module.js';
import { testRedisUrl } from '../../support/test-app.js';

/** What the specs choose about the sample app; it runs on the run's Redis. */
export interface SampleAppSettings {
  keyPrefix: string;
  orderExpiryMs: number;
  /** A PostgreSQL URL; without it the app uses its embedded database (PGlite). */
  databaseUrl: string | undefined;
  /** Another Redis than the run's (e.g. a private redis-server the spec stops). */
  redisUrl?: string;
}

/** The sample app listening on a free port of 127.0.0.1 (logging errors only), and its base URL. */
export async function listenSampleApp(settings: SampleAppSettings): Promise<{ app: INestApplication; base: string }> {
  const { redisUrl = testRedisUrl(), ...rest } = settings;
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.register({ port: 0, redisUrl, ...rest })],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  return { app, base: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
}
