/**
 * The consumer-app checks, run by each app's `main.ts`: the package as a user installs it from the
 * registry tarball, in a fresh Nest application, against a real Redis.
 */
import { Module, type INestApplication, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import {
  DelayQueueService,
  JobOutboxStore,
  LockNotHeldError,
  LockService,
  TransactionSynchronizer,
  type LockHandle,
} from 'nestjs-redis-lock';
import type { LibraryModule } from './app-flavor.js';
import type { AppFlavor } from './app-flavor.js';
import { assert, assertEqual, CheckList, within } from './check-list.js';
import { installedVersion } from './installed-packages.js';
import { COMPAT_TOPIC, CompatJobs, CompatModule, CompatOrdersController, type CompatJobPayload } from './compat.module.js';
import { startRedis, type CompatRedis } from './redis-server.js';
import { checkTestingSubpath } from './testing-subpath.js';

/** Waits on things that involve Redis round trips and timers: generous, the machine is shared. */
const WAIT_MS = 30_000;

/** Runs every check for `flavor`; `appModule` is the template's own AppModule, imported beside ours. */
export async function runCompat(flavor: AppFlavor, appModule: Type<unknown>): Promise<void> {
  const checks = new CheckList();
  const keyPrefix = `compat-${flavor.app}-${process.pid}`;
  checks.note(
    `${flavor.app} (${flavor.moduleSystem}) on Node ${process.version}: ` +
      ['nestjs-redis-lock', '@nestjs/core', 'ioredis', 'typescript', 'typeorm']
        .map((name) => [name, installedVersion(flavor.appRequire, name)])
        .filter(([name, version]) => name !== 'typeorm' || version !== 'not installed')
        .map(([name, version]) => `${name} ${version}`)
        .join(', '),
  );

  let redis: CompatRedis | undefined;
  let app: INestApplication | undefined;
  /** The package's other build, loaded by the dual-build check. */
  let otherBuild: LibraryModule | undefined;
  try {
    try {
      redis = await startRedis();
      checks.note(`Redis: ${redis.origin} ${redis.url}`);
    } catch (error) {
      checks.fail('Redis for the checks', error);
      return;
    }
    const redisUrl = redis.url;

    if (flavor.moduleSystem === 'commonjs') {
      await checks.run("the app's require loads the CommonJS build (dist/cjs)", () => {
        const resolved = flavor.appRequire.resolve('nestjs-redis-lock');
        assert(/[\\/]dist[\\/]cjs[\\/]index\.js$/.test(resolved), `require.resolve('nestjs-redis-lock') gave ${resolved}`);
      });
    }

    await checks.run('both builds in one process: shared tokens and errors, one warning', async () => {
      const warnings: Error[] = [];
      const onWarning = (warning: Error): void => void warnings.push(warning);
      process.on('warning', onWarning);
      try {
        // The same names at run time; its types are the other build's declarations (distinct classes).
        const other = (await flavor.loadTheOtherWay()) as LibraryModule;
        await new Promise((resolve) => setImmediate(resolve));
        const how = flavor.moduleSystem === 'commonjs' ? 'import()' : 'createRequire(import.meta.url)()';
        assert(other.LockService !== LockService, `${how} gave the same build as the app's imports: expected the other one`);
        assert(other.TransactionSynchronizer === TransactionSynchronizer, 'the TransactionSynchronizer token differs between the builds');
        assert(other.JobOutboxStore === JobOutboxStore, 'the JobOutboxStore token differs between the builds');
        assert(
          new other.LockNotHeldError('compat:k', 'extend') instanceof LockNotHeldError,
          "the other build's LockNotHeldError is not instanceof this one's",
        );
        assert(
          new LockNotHeldError('compat:k', 'extend') instanceof other.RedisLockError,
          "this build's error is not instanceof the other's RedisLockError",
        );
        assert(!(new LockNotHeldError('compat:k', 'extend') instanceof other.LockLostError), 'instanceof accepts an unrelated error class');
        const dual = warnings.filter((warning) => (warning as { code?: string }).code === 'NESTJS_REDIS_LOCK_DUAL_PACKAGE');
        assertEqual(dual.length, 1, 'NESTJS_REDIS_LOCK_DUAL_PACKAGE warnings');
        otherBuild = other;
      } finally {
        process.off('warning', onWarning);
      }
    });

    await checks.run("peer dependencies resolve to the app's own copies", () => {
      const fromLibrary = createRequire(flavor.appRequire.resolve('nestjs-redis-lock'));
      for (const peer of ['@nestjs/common', '@nestjs/core', 'ioredis', 'rxjs', 'reflect-metadata']) {
        const ours = flavor.appRequire.resolve(peer);
        const theirs = fromLibrary.resolve(peer);
        assertEqual(theirs, ours, `${peer} as nestjs-redis-lock resolves it (vs as the app does)`);
      }
    });

    await flavor.tracing.install();

    const compatModule = CompatModule.forRoot({
      redisUrl,
      keyPrefix,
      imports: flavor.metrics.imports,
      controllers: flavor.metrics.controllers,
    });

    @Module({ imports: [appModule, compatModule] })
    class CompatRootModule {}

    const booted = await checks.run('bootstrap: NestFactory.create + app.listen(0)', async () => {
      app = await NestFactory.create(CompatRootModule, { logger: ['error', 'warn'], abortOnError: false });
      await app.listen(0, '127.0.0.1');
    });
    if (!booted || !app) return;
    const started = app;
    const base = `http://127.0.0.1:${(started.getHttpServer().address() as AddressInfo).port}`;

    await checks.run('the template route GET / still answers', async () => {
      const response = await fetch(`${base}/`);
      assertEqual(response.status, 200, 'GET / status');
      assertEqual(await response.text(), 'Hello World!', 'GET / body');
    });

    await checks.run('LockService: acquire, contend, release', async () => {
      const locks = started.get(LockService);
      const key = 'compat:acquire';
      const handle = await locks.acquire(key, { waitTimeout: WAIT_MS });
      assert(handle.held, 'a fresh handle is not held');
      assert(/^[1-9][0-9]*$/.test(handle.fencingToken), `fencing token ${JSON.stringify(handle.fencingToken)} is not a positive decimal`);
      assert(await locks.isLocked(key), 'isLocked() is false while the lock is held');
      const keys = await keysUnder(redisUrl, keyPrefix);
      assert(
        keys.some((k) => k.includes(key)),
        `no Redis key for the lock under prefix ${keyPrefix}: ${keys.join(', ')}`,
      );
      const contender = await locks.tryAcquire(key);
      if (contender) await contender.release();
      assert(contender === null, 'tryAcquire() got a lock that another handle holds');
      await handle.release();
      assert(!handle.held, 'the handle still says held after release()');
      assert(!(await locks.isLocked(key)), 'isLocked() is still true after release()');
      const next = await locks.tryAcquire(key);
      assert(next !== null, 'tryAcquire() after the release did not get the lock');
      assert(BigInt(next.fencingToken) > BigInt(handle.fencingToken), 'the next holder did not get a larger fencing token');
      await next.release();
    });

    await checks.run("a lock section is seen by the other build's LockContext", async () => {
      assert(otherBuild !== undefined, 'the other build was not loaded (see the check above)');
      const seen = await started.get(LockService).using('compat:both-builds', (lock) => ({
        key: otherBuild!.LockContext.current()?.key,
        expected: lock.key,
      }));
      assertEqual(seen.key, seen.expected, 'LockContext.current()?.key of the other build inside using()');
    });

    await checks.run('await using releases the lock at the end of the block', async () => {
      const locks = started.get(LockService);
      const key = 'compat:await-using';
      let seen: LockHandle | undefined;
      {
        await using handle = await locks.acquire(key);
        seen = handle;
        assert(await locks.isLocked(key), 'not locked inside the block');
      }
      assert(seen !== undefined && !seen.held, 'the handle is still held after the block');
      assert(!(await locks.isLocked(key)), 'still locked in Redis after the block');
    });

    await checks.run('@WithLock route answers 409 while another request holds the lock', async () => {
      const orders = started.get(CompatOrdersController);
      const url = `${base}/compat/orders/42/capture`;
      const first = fetch(url);
      await within(WAIT_MS, 'the first request entering the locked handler', orders.entered.promise);
      const second = await fetch(url);
      const secondBody = await second.text();
      assertEqual(second.status, 409, `status of a second request while the first holds the lock (body ${secondBody})`);
      const otherOrder = fetch(`${base}/compat/orders/43/capture`);
      orders.gate.resolve();
      const firstResponse = await within(WAIT_MS, 'the first response', first);
      const firstBody = (await firstResponse.json()) as { id?: string; fencingToken?: string | null };
      assertEqual(firstResponse.status, 200, 'status of the request that held the lock');
      assert(/^[1-9][0-9]*$/.test(String(firstBody.fencingToken)), `LockContext gave no fencing token: ${JSON.stringify(firstBody)}`);
      assertEqual((await within(WAIT_MS, 'the response for another order', otherOrder)).status, 200, 'another order, another lock');
      assertEqual((await fetch(url)).status, 200, 'status once the lock is free again');
    });

    await checks.run('@OnDelayed handler receives a job scheduled with DelayQueueService', async () => {
      const queue = started.get(DelayQueueService);
      const id = await queue.schedule<CompatJobPayload>(COMPAT_TOPIC, { orderId: '42' }, { delay: 200 });
      const { payload, job } = await within(WAIT_MS, 'the delivery to the @OnDelayed handler', started.get(CompatJobs).delivered.promise);
      assertEqual(job.id, id, 'job id seen by the handler');
      assertEqual(job.topic, COMPAT_TOPIC, 'job topic');
      assertEqual(job.attempt, 1, 'attempt');
      assertEqual(payload.orderId, '42', 'payload.orderId');
    });

    await flavor.metrics.verify(checks, base);

    await checks.run('nestjs-redis-lock/health: terminus check up', async () => {
      const response = await fetch(`${base}/compat/health`);
      const body = (await response.json()) as { status?: string; info?: Record<string, { status?: string }> };
      assertEqual(response.status, 200, `GET /compat/health status (body ${JSON.stringify(body)})`);
      assertEqual(body.status, 'ok', 'health status');
      assertEqual(body.info?.redis?.status, 'up', 'redis indicator');
      assertEqual(body.info?.queues?.status, 'up', 'queues indicator');
    });

    await checks.run('nestjs-redis-lock/dashboard: page and JSON API', async () => {
      const page = await fetch(`${base}/compat/dashboard`);
      const html = await page.text();
      assertEqual(page.status, 200, 'dashboard page status');
      assert(/text\/html/.test(page.headers.get('content-type') ?? ''), `dashboard page content-type ${page.headers.get('content-type')}`);
      assert(html.includes('<html') || html.includes('<!DOCTYPE') || html.includes('<!doctype'), 'the dashboard page is not HTML');
      const topics = await fetch(`${base}/compat/dashboard/api/topics`);
      const topicsText = await topics.text();
      assertEqual(topics.status, 200, `dashboard API /api/topics status (body ${topicsText.slice(0, 300)})`);
      assert(topicsText.includes(COMPAT_TOPIC), `the dashboard does not list ${COMPAT_TOPIC}: ${topicsText.slice(0, 300)}`);
      const locks = await fetch(`${base}/compat/dashboard/api/locks`);
      assertEqual(locks.status, 200, 'dashboard API /api/locks status');
      JSON.parse(await locks.text());
    });

    await flavor.tracing.verify(checks);

    await checks.run('app.close() shuts the module down', async () => {
      await within(WAIT_MS, 'app.close()', started.close());
      app = undefined;
    });

    await checks.run('nestjs-redis-lock/testing: a testing module on a test Redis', () => checkTestingSubpath());

    for (const extra of flavor.extraChecks) {
      await checks.run(extra.name, () => extra.run(redisUrl, `${keyPrefix}-${extra.id}`));
    }
    for (const reason of flavor.notRun) checks.note(`not run here: ${reason}`);
  } catch (error) {
    checks.fail('unexpected error in the check runner', error);
  } finally {
    if (app) await app.close().catch((error: unknown) => checks.fail('app.close() after a failure', error));
    if (redis?.origin === 'REDIS_URL') await removeKeys(redis.url, keyPrefix).catch(() => undefined);
    await redis?.stop();
    console.log(`COMPAT summary ${checks.passed} passed, ${checks.failures.length} failed`);
    process.exitCode = checks.failures.length === 0 ? 0 : 1;
  }
}

async function keysUnder(url: string, prefix: string): Promise<string[]> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
    return keys;
  } finally {
    client.disconnect();
  }
}

async function removeKeys(url: string, prefix: string): Promise<void> {
  const keys = await keysUnder(url, prefix);
  if (keys.length === 0) return;
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    await client.del(...keys);
  } finally {
    client.disconnect();
  }
}
