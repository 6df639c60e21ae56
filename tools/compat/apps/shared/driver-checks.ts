/**
 * The drivers app's checks (nest12-drivers, which installs redis, @valkey/valkey-glide and iovalkey
 * but not ioredis): for each of those drivers, named (`{ driver, url }`) and as a client the app
 * opened itself (`{ client }`), a fresh application bootstraps, takes and releases a lock, runs a
 * delayed job and closes, leaving the app's own client open and none of the module's connections
 * behind; and the default driver (ioredis, not installed) fails bootstrap with its install command.
 */
import { Injectable, Module, type DynamicModule, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  DelayQueueService,
  InvalidOptionsError,
  LockService,
  OnDelayed,
  RedisLockModule,
  type JobContext,
  type RedisConnectionOptions,
} from 'nestjs-redis-lock';
import { assert, assertEqual, CheckList, deferred, within } from './check-list.js';
import { installedVersion, resolvedPath } from './installed-packages.js';
import { DRIVERS_UNDER_TEST, type DriverUnderTest, type UserClient } from './driver-clients.js';
import { openRedisAdmin, type RedisAdmin } from './redis-admin.js';
import { startRedis, type CompatRedis } from './redis-server.js';

/** What the drivers app tells the checks about itself. */
export interface DriverAppFlavor {
  readonly app: string;
  /** The app's own `require`, to resolve packages as it does. */
  readonly appRequire: NodeJS.Require;
}

/** Waits on things that involve Redis round trips and timers: generous, the machine is shared. */
const WAIT_MS = 30_000;
const TOPIC = 'compat.driver-job';

@Injectable()
class DriverJobs {
  readonly delivered = deferred<{ payload: { n: number }; job: JobContext }>();

  @OnDelayed(TOPIC)
  handle(payload: { n: number }, job: JobContext): void {
    this.delivered.resolve({ payload, job });
  }
}

@Module({})
class DriverCompatModule {
  static forRoot(redis: RedisConnectionOptions, keyPrefix: string): DynamicModule {
    return { module: DriverCompatModule, imports: [RedisLockModule.forRoot({ redis, keyPrefix })], providers: [DriverJobs] };
  }
}

/** Runs every check; `appModule` is the template's own AppModule, bootstrapped beside ours each time. */
export async function runCompat(flavor: DriverAppFlavor, appModule: Type<unknown>): Promise<void> {
  const checks = new CheckList();
  const keyPrefix = `compat-${flavor.app}-${process.pid}`;
  const packages = ['nestjs-redis-lock', '@nestjs/core', 'typescript', 'ioredis', ...DRIVERS_UNDER_TEST.map((d) => d.packageName)];
  checks.note(
    `${flavor.app} (commonjs) on Node ${process.version}: ` +
      packages.map((name) => `${name} ${installedVersion(flavor.appRequire, name)}`).join(', '),
  );
  let redis: CompatRedis | undefined;
  let admin: RedisAdmin | undefined;
  try {
    try {
      redis = await startRedis();
      admin = await openRedisAdmin(redis.url);
      checks.note(`Redis: ${redis.origin} ${redis.url}`);
    } catch (error) {
      checks.fail('Redis for the checks', error);
      return;
    }
    const run = { checks, url: redis.url, admin, appModule, keyPrefix, exclusive: redis.origin === 'private redis-server' };

    await checks.run('ioredis is not installed in this app', () => {
      const resolved = resolvedPath(flavor.appRequire, 'ioredis');
      assert(resolved === undefined, `the app resolves ioredis: ${resolved}`);
    });
    await checks.run("redis: 'redis://…' (the default driver, ioredis) fails bootstrap naming `npm install ioredis`", async () => {
      // Nest would log the expected failure as an ERROR: this bootstrap is silent.
      const app = await bootstrap(appModule, run.url, `${keyPrefix}-default`, false).catch((error: unknown) => error);
      if (!(app instanceof Error)) {
        await (app as INestApplicationContext).close();
        throw new Error('bootstrap succeeded without ioredis');
      }
      assert(app instanceof InvalidOptionsError, `expected InvalidOptionsError, got ${app.name}: ${app.message}`);
      assert(app.message.includes('npm install ioredis'), `the message does not name \`npm install ioredis\`: ${app.message}`);
      checks.note(`without ioredis: ${app.message}`);
    });

    for (const driver of DRIVERS_UNDER_TEST) {
      await checkDriver(run, driver, 'driver');
      await checkDriver(run, driver, 'client');
    }
  } catch (error) {
    checks.fail('unexpected error in the check runner', error);
  } finally {
    if (redis?.origin === 'REDIS_URL') await admin?.removeKeys(keyPrefix).catch(() => undefined);
    admin?.close();
    await redis?.stop();
    console.log(`COMPAT summary ${checks.passed} passed, ${checks.failures.length} failed`);
    process.exitCode = checks.failures.length === 0 ? 0 : 1;
  }
}

interface DriverRun {
  readonly checks: CheckList;
  readonly url: string;
  readonly admin: RedisAdmin;
  readonly appModule: Type<unknown>;
  readonly keyPrefix: string;
  /** The Redis is this app's alone: its connection count is ours to compare. */
  readonly exclusive: boolean;
}

/** One driver, one way of naming it: bootstrap, lock, delayed job, close, and what stays open after. */
async function checkDriver(run: DriverRun, driver: DriverUnderTest, how: 'driver' | 'client'): Promise<void> {
  const { checks, admin } = run;
  const clientOption = driver.driver === 'valkey-glide' ? '{ client, url }' : '{ client }';
  const label = `${driver.driver} by ${how === 'driver' ? '{ driver, url }' : clientOption}`;
  const keyPrefix = `${run.keyPrefix}-${driver.driver}-${how}`;
  let user: UserClient | undefined;
  let app: INestApplicationContext | undefined;
  try {
    if (how === 'client') {
      const opened = await checks.run(`${label}: the app opens its own ${driver.packageName} client`, async () => {
        user = await driver.openClient(run.url);
      });
      if (!opened) return;
    }
    const before = await admin.connectionCount();
    const option = user ? user.option : driver.byDriver(run.url);
    const booted = await checks.run(`${label}: bootstrap`, async () => {
      app = await bootstrap(run.appModule, option, keyPrefix);
    });
    if (!booted || !app) return;
    const started = app;

    await checks.run(`${label}: lock acquire, contend, release`, async () => {
      const locks = started.get(LockService);
      const key = 'compat:driver-lock';
      const handle = await locks.acquire(key, { waitTimeout: WAIT_MS });
      assert(/^[1-9][0-9]*$/.test(handle.fencingToken), `fencing token ${JSON.stringify(handle.fencingToken)} is not a positive decimal`);
      const keys = await admin.keysUnder(keyPrefix);
      assert(
        keys.some((k) => k.includes(key)),
        `no Redis key for the lock under ${keyPrefix}: ${keys.join(', ')}`,
      );
      const contender = await locks.tryAcquire(key);
      if (contender) await contender.release();
      assert(contender === null, 'tryAcquire() got a lock that another handle holds');
      await handle.release();
      assert(!(await locks.isLocked(key)), 'isLocked() is still true after release()');
      const next = await locks.tryAcquire(key);
      assert(next !== null, 'tryAcquire() after the release did not get the lock');
      assert(BigInt(next.fencingToken) > BigInt(handle.fencingToken), 'the next holder did not get a larger fencing token');
      await next.release();
    });

    await checks.run(`${label}: a delayed job reaches its @OnDelayed handler`, async () => {
      const id = await started.get(DelayQueueService).schedule(TOPIC, { n: 7 }, { delay: 200 });
      const { payload, job } = await within(WAIT_MS, 'the delivery to the @OnDelayed handler', started.get(DriverJobs).delivered.promise);
      assertEqual(job.id, id, 'job id seen by the handler');
      assertEqual(job.attempt, 1, 'attempt');
      assertEqual(payload.n, 7, 'payload.n');
    });

    const during = await admin.connectionCount();
    const closed = await checks.run(`${label}: app.close()`, async () => {
      await within(WAIT_MS, 'app.close()', started.close());
      app = undefined;
    });
    if (!closed) return;

    if (user) {
      const client = user;
      await checks.run(`${label}: the app's own client is still open after app.close()`, async () => {
        const problem = await client.problem();
        assert(problem === undefined, `the module's close() broke the client it was given: ${problem}`);
      });
    }
    if (run.exclusive) {
      await checks.run(`${label}: the module's own connections are closed`, async () => {
        const deadline = Date.now() + WAIT_MS;
        let now = await admin.connectionCount();
        // The server notices a closed socket a moment after the client closed it: wait for that, not a fixed time.
        while (now > before && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          now = await admin.connectionCount();
        }
        assert(during > before, `the module opened no connection of its own: ${during} while it ran, ${before} before`);
        assert(now <= before, `${now} connections after app.close(), ${during} while it ran, ${before} before bootstrap`);
      });
    }
  } finally {
    if (app) await app.close().catch((error: unknown) => checks.fail(`${label}: app.close() after a failure`, error));
    await user?.close().catch((error: unknown) => checks.fail(`${label}: closing the app's own client`, error));
  }
}

/** A fresh application context with the template's AppModule and the module on `redis`. */
async function bootstrap(
  appModule: Type<unknown>,
  redis: RedisConnectionOptions,
  keyPrefix: string,
  logs = true,
): Promise<INestApplicationContext> {
  @Module({ imports: [appModule, DriverCompatModule.forRoot(redis, keyPrefix)] })
  class DriverRootModule {}
  return NestFactory.createApplicationContext(DriverRootModule, { logger: logs ? ['error', 'warn'] : false, abortOnError: false });
}
