import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { hasRedisServerBinary, startLocalRedisServer, type LocalRedisServer } from 'nestjs-redis-lock/testing';
import { AppModule } from './app.module.js';
import { sampleConfigFromEnv } from './config/sample-config.js';

const logger = new Logger('SampleApp');

/**
 * Starts the orders service. With no REDIS_URL it starts a private redis-server (from PATH) for the
 * life of the process; with no DATABASE_URL it uses an embedded PGlite database.
 */
async function main(): Promise<void> {
  let localRedis: LocalRedisServer | undefined;
  if (!process.env.REDIS_URL) {
    if (!hasRedisServerBinary()) {
      throw new Error(
        'REDIS_URL is not set and no redis-server is on PATH. Install it (`sudo apt-get install redis-server` ' +
          'on Debian/Ubuntu, `brew install redis` on macOS) or set REDIS_URL=redis://host:port.',
      );
    }
    localRedis = await startLocalRedisServer();
    process.env.REDIS_URL = localRedis.url;
    logger.log(`Started a local redis-server at ${localRedis.url} (set REDIS_URL to use your own)`);
  }
  const config = sampleConfigFromEnv();
  const app = await NestFactory.create(AppModule.register(config), { logger: ['log', 'warn', 'error'] });
  await app.listen(config.port, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  logger.log(`Orders service listening on ${url}`);
  logger.log(`Dashboard (locks and delayed jobs): ${url}/dashboard`);

  const stop = async () => {
    await app.close();
    await localRedis?.stop();
    process.exit(0);
  };
  // Close the app first (drains delayed-job handlers, releases connections), then the local Redis.
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

main().catch((error) => {
  logger.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
