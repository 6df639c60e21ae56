import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { DRIVER_PACKAGES, REDIS_DRIVERS, type RedisDriverName } from '../options/redis-drivers.js';
import { packageRequire } from '../runtime/build-format.js';

/** The driver whose package is `name`, if any. */
function driverOfPackage(name: string): RedisDriverName | undefined {
  return REDIS_DRIVERS.find((driver) => DRIVER_PACKAGES[driver] === name);
}

/**
 * Loads a driver's package (an optional peer) when the options first need it. Missing, it fails
 * bootstrap with the package's name and the command that installs it, never a bare
 * "Cannot find module".
 */
export function loadDriverPackage(name: string): unknown {
  try {
    return packageRequire(name);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'MODULE_NOT_FOUND' || !String((error as Error).message).includes(name)) throw error;
    const driver = driverOfPackage(name);
    throw new InvalidOptionsError(
      'redis.driver',
      `the ${JSON.stringify(driver ?? name)} driver needs the package "${name}", which is not installed: ` +
        `run \`npm install ${name}\` in your application`,
    );
  }
}
