import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';

/**
 * Silences Nest's Logger at `levels`, for specs that cause warnings or errors on purpose;
 * `jest.restoreAllMocks()` turns it back on.
 */
export function muteNestLogger(...levels: Array<'warn' | 'error'>): void {
  for (const level of levels) jest.spyOn(Logger.prototype, level).mockImplementation(() => undefined);
}
