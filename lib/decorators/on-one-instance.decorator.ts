import { ON_ONE_INSTANCE_METADATA } from '../scheduling/scheduling.constants.js';
import { runLockKey, type OneInstanceDeclaration, type OneInstanceLeases } from '../scheduling/one-instance-leases.js';
import { ONE_INSTANCE_LEASES_PROPERTY } from './decorators.constants.js';
import { resolveLeaseDeclaration } from './resolve-lease-declaration.js';
import { wrapProviderMethod } from './wrap-provider-method.js';

/**
 * Options of `@OnOneInstance`.
 */
export interface OnOneInstanceOptions {
  /**
   * The lease's lock name. Default `ClassName.methodName`. Set it when the class or method may be
   * renamed (a deploy where old and new instances run side by side must agree on the key, or both
   * run the calls for a while), when two classes share a name, or when several methods must run on
   * the same instance (give them the same key). A run also holds the lock `<key>:run`.
   */
  key?: string;
  /**
   * Lease in ms (at least 100): renewed every third of it while the application lives; when the
   * holder dies, another instance takes over at its first call after this long. Keep it well above
   * the timer skew between instances and below the period you can afford to miss. Default 30 000.
   */
  ttl?: number;
}

/**
 * Runs the method's calls on one instance of the application only: meant for `@nestjs/schedule`'s
 * `@Cron()` / `@Interval()`, whose timers fire on every instance.
 *
 * The instance that holds the method's lease (kept across calls, taken over `ttl` after its holder
 * died) runs each call; on the others the call resolves `undefined` at once, and so it does on an
 * instance that cannot reach Redis to confirm the lease (counted in the module's outage log, not
 * rejected). See docs/scheduling.md (`@OnOneInstance`).
 *
 * @example
 * \@Injectable()
 * export class ReportsService {
 *   \@Cron('0 2 * * *')
 *   \@OnOneInstance({ key: 'reports.daily', ttl: 60_000 })
 *   async buildDailyReport() {
 *     const { fencingToken } = LockContext.current()!;
 *     await this.reports.write(today(), { fencingToken });
 *   }
 * }
 */
export function OnOneInstance(options?: OnOneInstanceOptions): MethodDecorator {
  return wrapProviderMethod<OneInstanceLeases>({
    decorator: '@OnOneInstance',
    carriers: 'a provider',
    service: (services) => services.oneInstanceLeases,
    property: ONE_INSTANCE_LEASES_PROPERTY,
    prepare: ({ propertyKey, className, location }) => {
      const method = `${className}.${String(propertyKey)}`;
      const declaration: OneInstanceDeclaration = {
        ...resolveLeaseDeclaration(options ?? {}, ['key', 'ttl'], method, location, (key) => [runLockKey(key)]),
        method,
      };
      return { run: (leases, call) => leases.run(declaration, call), metadata: { [ON_ONE_INSTANCE_METADATA]: declaration } };
    },
  });
}
