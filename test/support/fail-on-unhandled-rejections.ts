import { UnhandledRejections } from './unhandled-rejections.js';

export interface UnhandledRejectionsCheck {
  /** `'all'` (default): once, after the spec's last hook; `'each'`: after every test (not the teardown). */
  readonly after?: 'all' | 'each';
}

/**
 * Records the process's unhandled rejections for a whole spec file and fails it if there was one.
 * Call it at the file's top level: its `beforeAll` then runs before every describe block's hooks and
 * its `afterAll` after them, so the apps' start and close are watched too (Jest runs the `afterAll`
 * hooks of one block in the order they were declared, so inside a block it would stop listening
 * before the block's own teardown).
 */
export function failOnUnhandledRejections({ after = 'all' }: UnhandledRejectionsCheck = {}): UnhandledRejections {
  const unhandled = new UnhandledRejections();
  beforeAll(() => unhandled.start());
  if (after === 'each') afterEach(() => expect(unhandled.reasons).toEqual([]));
  afterAll(() => {
    unhandled.stop();
    if (after === 'all') expect(unhandled.reasons).toEqual([]);
  });
  return unhandled;
}
