import { InvalidOptionsError } from '../../../../lib/index.js';
import { loadDriverPackage } from '../../../../lib/core/redis/driver-packages.js';

describe('loadDriverPackage', () => {
  it('loads an installed driver package', () => {
    expect(typeof (loadDriverPackage('iovalkey') as { Redis: unknown }).Redis).toBe('function');
  });

  it('names a missing package and the command that installs it', () => {
    let thrown: unknown;
    try {
      loadDriverPackage('@valkey/not-a-real-driver');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidOptionsError);
    expect((thrown as InvalidOptionsError).option).toBe('redis.driver');
    expect((thrown as Error).message).toContain('npm install @valkey/not-a-real-driver');
  });
});
