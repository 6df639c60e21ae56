import { leaseLossMargin, leaseLostAt, leaseRenewalInterval } from '../../../../lib/core/time/lease-policy.js';

describe('lease policy', () => {
  describe('leaseRenewalInterval', () => {
    it.each([
      [30_000, 10_000],
      [100, 33],
      [10, 3],
      [2, 1],
    ])('renews a lease of %d ms every %d ms (a third, in whole ms, at least 1)', (lease, interval) => {
      expect(leaseRenewalInterval(lease)).toBe(interval);
    });

    it.each([
      [2_592_000_000, 864_000_000],
      [3 * 2_147_483_647, 2_147_483_647],
      [365 * 86_400_000, 2_147_483_647],
    ])(
      "renews a lease of %d ms (weeks) every %d ms: never past setTimeout's bound, which would fire every millisecond",
      (lease, interval) => {
        expect(leaseRenewalInterval(lease)).toBe(interval);
      },
    );

    it('leaves room for two renewals to fail before the lease runs out', () => {
      for (const lease of [10, 99, 100, 1_000, 30_000, 86_400_000, 2_592_000_000, 365 * 86_400_000]) {
        expect(2 * leaseRenewalInterval(lease)).toBeLessThan(lease);
      }
    });
  });

  describe('leaseLossMargin', () => {
    it.each([
      [30_000, 1_000],
      [20_000, 1_000],
      [600_000, 1_000],
      [10_000, 500],
      [1_000, 50],
      [300, 15],
      [200, 10],
      [100, 10],
      [50, 5],
      [10, 1],
    ])('counts a lease of %d ms as lost %d ms before its end', (lease, margin) => {
      expect(leaseLossMargin(lease)).toBe(margin);
    });

    it('keeps the margin below the renewal interval, so a renewal on time always lands before the loss', () => {
      for (const lease of [10, 30, 99, 100, 150, 1_000, 30_000, 86_400_000]) {
        expect(leaseLossMargin(lease)).toBeLessThan(lease - leaseRenewalInterval(lease));
        expect(leaseLossMargin(lease)).toBeGreaterThan(0);
      }
    });

    it('gives a visibility timeout (100 ms or more) 5 % of it, between 10 ms and 1 s', () => {
      for (const visibility of [100, 150, 199, 200, 999, 1_000, 19_999, 20_000, 30_000, 3_600_000]) {
        expect(leaseLossMargin(visibility)).toBe(Math.min(1_000, Math.max(10, Math.round(visibility * 0.05))));
      }
    });
  });

  describe('leaseLostAt', () => {
    it('is the lease counted from when the confirming command was sent, less the margin', () => {
      expect(leaseLostAt(5_000, 30_000)).toBe(5_000 + 30_000 - 1_000);
      expect(leaseLostAt(0, 200)).toBe(190);
      expect(leaseLostAt(12.5, 1_000)).toBe(12.5 + 950);
    });

    it('moves only with a later confirmation', () => {
      expect(leaseLostAt(2_000, 1_000) - leaseLostAt(1_000, 1_000)).toBe(1_000);
    });
  });
});
