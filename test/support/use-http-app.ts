import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import { useResource } from './use-resource.js';

/** A Nest application listening on a free port of 127.0.0.1, and the URL to reach it. */
export interface HttpApp {
  readonly app: INestApplication;
  readonly baseUrl: string;
}

/** Compiles `metadata` into an application with Nest's logger off, listening on a free port of 127.0.0.1. */
export async function listenHttpApp(metadata: ModuleMetadata): Promise<HttpApp> {
  const moduleRef = await Test.createTestingModule(metadata).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  return { app, baseUrl: `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}` };
}

/** `listenHttpApp(metadata())` before the block's tests (`useResource`; `metadata` is called in the hook); closed after them. */
export function useHttpApp(metadata: () => ModuleMetadata): HttpApp {
  return useResource(
    'the HTTP app',
    () => listenHttpApp(metadata()),
    ({ app }) => app.close(),
  );
}
