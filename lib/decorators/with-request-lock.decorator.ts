import type { ExecutionContext } from '@nestjs/common';
import { compileKeySource } from './key-template.js';
import { keyPatternOf, resolveWithLockOptions, type ResolvedWithLockOptions, type WithLockOptions } from './with-lock-options.js';
import { WITH_REQUEST_LOCK_METADATA } from './decorators.constants.js';

/**
 * Where a route lock's key comes from: a template over the request (`'order:<params.id>'`,
 * `'tenant:<headers.x-tenant-id>'`, `'cart:<user.id>'`), an array of templates, or a function of the
 * request and the execution context. For RPC and WebSocket handlers the root is the message data.
 *
 * @inline
 */
export type RequestLockKeySource =
  | string
  | readonly string[]
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's own request type (Express, Fastify)
  | ((request: any, context: ExecutionContext) => string | readonly string[]);

/** What `@WithRequestLock` records. Internal. */
export interface RequestLockDeclaration {
  readonly location: string;
  readonly options: ResolvedWithLockOptions;
  readonly keyOf: (request: unknown, context: ExecutionContext) => string | string[];
}

/**
 * Locks a route (or every route of a controller) on a key taken from the raw request, after guards
 * and before the handler's pipes, until the response stream completes. A missing value answers 400,
 * a lock not free within `waitTimeout` 409 Conflict (or what `onLocked` returns). See
 * docs/with-lock-and-transactions.md (`@WithRequestLock`: lock a route on a value from the request).
 *
 * @example
 * \@Controller('orders')
 * export class OrdersController {
 *   \@Post(':id/pay')
 *   \@WithRequestLock('order:<params.id>', { waitTimeout: 0 })
 *   pay(@Param('id') id: string) {
 *     return this.payments.capture(id);
 *   }
 * }
 */
export function WithRequestLock(key: RequestLockKeySource, options?: WithLockOptions): MethodDecorator & ClassDecorator {
  return ((target: object, propertyKey?: string | symbol, descriptor?: PropertyDescriptor) => {
    const className = typeof target === 'function' ? target.name : target.constructor.name;
    const location =
      propertyKey === undefined ? `@WithRequestLock on ${className}` : `@WithRequestLock on ${className}.${String(propertyKey)}()`;
    const keyOf = compileKeySource<{ request: unknown; context: ExecutionContext }>(key, {
      root: 'property',
      location,
      rootOf: ({ request }) => ({ value: request, name: 'request' }),
      callFn: (fn, { request, context }) => fn(request, context),
    });
    const declaration: RequestLockDeclaration = {
      location,
      options: resolveWithLockOptions(options, location, keyPatternOf(key, location.replace(/^@WithRequestLock on /, ''))),
      keyOf: (request, context) => keyOf({ request, context }),
    };
    Reflect.defineMetadata(WITH_REQUEST_LOCK_METADATA, declaration, descriptor ? descriptor.value : target);
    return descriptor;
  }) as MethodDecorator & ClassDecorator;
}
