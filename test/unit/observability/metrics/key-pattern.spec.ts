import { defaultLockKeyPattern } from 'nestjs-redis-lock/metrics';

describe('defaultLockKeyPattern: a lock key generalised into its label (docs/observability.md, "raw keys never become labels")', () => {
  it('keeps the first segment only, and folds its digits, UUIDs and long hex ids', () => {
    const patternOf: Record<string, string> = {
      // The first segment only, with what follows it folded.
      'account:a': 'account:*',
      'order:42': 'order:*',
      'report:daily': 'report:*',
      'user:3f2504e0-4f89-11d3-9a0c-0305e82c3301:cart': 'user:*',
      'doc:507f1f77bcf86cd799439011': 'doc:*',
      // Digits, UUIDs and long hex ids folded in the first segment itself.
      'shard7:x': 'shard<n>:*',
      'job-42': 'job-<n>',
      '3f2504e0-4f89-11d3-9a0c-0305e82c3301': '<uuid>',
      '507f1f77bcf86cd799439011-sync': '<hex>-sync',
      'nightly-report': 'nightly-report',
    };
    const keys = Object.keys(patternOf);
    expect(Object.fromEntries(keys.map((key) => [key, defaultLockKeyPattern(key)]))).toEqual(patternOf);
  });
});
