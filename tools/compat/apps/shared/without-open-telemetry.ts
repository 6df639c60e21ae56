/**
 * Tracing probes of the apps that register no OpenTelemetry SDK. The package must run either way;
 * by the time `verify` runs the lock, HTTP and job checks have passed, so what is left to show is
 * the situation they passed in.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { TracingProbe } from './app-flavor.js';
import { assert } from './check-list.js';

/** `@opentelemetry/api` (an optional peer) is not installed at all: tracing is `NO_TRACING`. */
export function withoutOpenTelemetry(appRequire: NodeJS.Require): TracingProbe {
  return {
    label: 'no @opentelemetry/api',
    install: () => undefined,
    async verify(checks) {
      await checks.run('runs without @opentelemetry/api installed (no-op tracing)', () => {
        for (const [who, resolver] of resolvers(appRequire)) {
          const found = resolveOrUndefined(resolver, '@opentelemetry/api');
          assert(
            found === undefined,
            `${who} can load @opentelemetry/api (${found}); this app must not have it, to show the package runs without it`,
          );
        }
      });
    },
  };
}

/**
 * `@opentelemetry/api` is in node_modules only because prom-client 15 depends on it, and the app
 * registers no SDK: the package's spans are the API's non-recording ones.
 */
export function withOpenTelemetryApiOnly(appRequire: NodeJS.Require): TracingProbe {
  return {
    label: '@opentelemetry/api via prom-client, no SDK',
    install: () => undefined,
    async verify(checks) {
      await checks.run('runs with @opentelemetry/api but no SDK registered (non-recording spans)', () => {
        const manifest = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as {
          dependencies?: Record<string, string>;
          devDependencies?: Record<string, string>;
        };
        const declared = { ...manifest.dependencies, ...manifest.devDependencies };
        assert(!('@opentelemetry/api' in declared), 'this app must not depend on @opentelemetry/api itself');
        const [, fromLibrary] = resolvers(appRequire)[1];
        const found = resolveOrUndefined(fromLibrary, '@opentelemetry/api');
        if (found === undefined) return; // prom-client no longer brings it: the no-API case, also fine
        const api = fromLibrary('@opentelemetry/api') as OpenTelemetryApiSubset;
        const span = api.trace.getTracer('nestjs-redis-lock').startSpan('compat.probe');
        const recording = span.isRecording();
        span.end();
        assert(!recording, 'a span of the package would be recorded although the app registered no tracer provider');
      });
    },
  };
}

/** The part of `@opentelemetry/api` used here (its types are not there in the app without it). */
interface OpenTelemetryApiSubset {
  trace: { getTracer(name: string): { startSpan(name: string): { isRecording(): boolean; end(): void } } };
}

function resolvers(appRequire: NodeJS.Require): Array<[string, NodeJS.Require]> {
  return [
    ['the app', appRequire],
    ['nestjs-redis-lock', createRequire(appRequire.resolve('nestjs-redis-lock'))],
  ];
}

function resolveOrUndefined(resolver: NodeJS.Require, request: string): string | undefined {
  try {
    return resolver.resolve(request);
  } catch (error) {
    if ((error as { code?: string }).code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}
