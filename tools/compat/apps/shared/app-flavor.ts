/**
 * What differs between the consumer apps (CommonJS or ESM output, OpenTelemetry or not, which
 * transaction adapters can be installed): each app gets one `<app>.flavor.ts` exporting one of these.
 */
import type { DynamicModule, Type } from '@nestjs/common';
import type * as NestjsRedisLock from 'nestjs-redis-lock';
import type { CheckList } from './check-list.js';

export type LibraryModule = typeof NestjsRedisLock;

export interface TracingProbe {
  /** What the summary says about tracing, e.g. 'OpenTelemetry SDK registered' or 'no @opentelemetry/api'. */
  readonly label: string;
  /** Runs before the application is created (register a tracer provider here). */
  install(): Promise<void> | void;
  /** Runs after the lock and job checks: checks the spans recorded (or that none could be). */
  verify(checks: CheckList): Promise<void>;
}

/** `nestjs-redis-lock/metrics`: registered (with prom-client) or shown to fail cleanly (without). */
export interface MetricsProbe {
  readonly label: string;
  readonly imports: readonly DynamicModule[];
  readonly controllers: readonly Type<unknown>[];
  /** Runs after the lock and job checks, with the app's base URL. */
  verify(checks: CheckList, base: string): Promise<void>;
}

/** A check that needs its own Nest application context (a transaction adapter, say). */
export interface ExtraCheck {
  readonly name: string;
  /** Short, for its key prefix. */
  readonly id: string;
  run(redisUrl: string, keyPrefix: string): Promise<void>;
}

export interface AppFlavor {
  /** The app's name, e.g. 'nest12-cjs'. */
  readonly app: string;
  readonly moduleSystem: 'commonjs' | 'esm';
  /** `require` as the app's own code has it: the module's `require` (CJS) or `createRequire(import.meta.url)` (ESM). */
  readonly appRequire: NodeJS.Require;
  /**
   * The package loaded the other way than the app's static imports: `import()` in CJS, `require()` in
   * ESM, which gives its other build (typed `unknown`: the two builds' declarations are distinct types).
   */
  loadTheOtherWay(): Promise<unknown>;
  readonly tracing: TracingProbe;
  readonly metrics: MetricsProbe;
  readonly extraChecks: readonly ExtraCheck[];
  /** Checks the summary reports as not run in this app, with the reason. */
  readonly notRun: readonly string[];
}
