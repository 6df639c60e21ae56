import { planFencingToken, type FenceVote } from '../../../../lib/lock/redlock/fencing-token.js';

const votes = (...fences: Array<[master: number, fence: number]>): FenceVote[] =>
  fences.map(([master, fence]) => ({ master, fence: BigInt(fence) }));

describe('planFencingToken: the token of a won Redlock vote', () => {
  it('hands out the common counter when the granting masters moved together', () => {
    expect(planFencingToken(votes([0, 41], [1, 41], [2, 41]), 2)).toEqual({ token: 41n, atToken: 3, behind: [] });
  });

  it('takes the highest counter among the granting masters', () => {
    expect(planFencingToken(votes([0, 12], [2, 30], [4, 17]), 3).token).toBe(30n);
  });

  it('raises nothing when a quorum of granting masters is already at the token', () => {
    expect(planFencingToken(votes([0, 9], [1, 9], [2, 5]), 2)).toEqual({ token: 9n, atToken: 2, behind: [] });
  });

  it('lists the lagging granting masters when fewer than a quorum are at the token', () => {
    expect(planFencingToken(votes([0, 5], [1, 9], [2, 7]), 2)).toEqual({ token: 9n, atToken: 1, behind: [0, 2] });
    expect(planFencingToken(votes([1, 100], [3, 2]), 2)).toEqual({ token: 100n, atToken: 1, behind: [3] });
  });

  it('keeps the invariant: after raising the lagging masters, a quorum holds a counter >= the token', () => {
    const cases: Array<[FenceVote[], number]> = [
      [votes([0, 5], [1, 9], [2, 7]), 2],
      [votes([0, 1], [1, 2], [2, 3], [3, 4], [4, 5]), 3],
      [votes([0, 50], [1, 50], [2, 10], [3, 10]), 3],
    ];
    for (const [grants, quorum] of cases) {
      const plan = planFencingToken(grants, quorum);
      expect(plan.atToken + plan.behind.length).toBeGreaterThanOrEqual(quorum);
      const atOrAbove = grants.filter((g) => g.fence >= plan.token || plan.behind.includes(g.master));
      expect(atOrAbove.length).toBeGreaterThanOrEqual(quorum);
    }
  });

  it('gives a larger token to the next holder once the lagging masters were raised', () => {
    // Holder 1 wins on masters 0 (counter 8) and 1 (counter 6): token 8, master 1 must be raised to 8.
    const first = planFencingToken(votes([0, 8], [1, 6]), 2);
    expect(first).toEqual({ token: 8n, atToken: 1, behind: [1] });
    // Holder 2 wins on masters 1 (raised to 8) and 2 (counter 3); each grant steps the counter by one.
    const second = planFencingToken(votes([1, 8 + 1], [2, 3 + 1]), 2);
    expect(second.token).toBe(9n);
    expect(second.token).toBeGreaterThan(first.token);
  });

  it('compares counters as integers beyond 2^53', () => {
    const big = 2n ** 60n;
    const plan = planFencingToken(
      [
        { master: 0, fence: big + 1n },
        { master: 1, fence: big },
      ],
      2,
    );
    expect(plan).toEqual({ token: big + 1n, atToken: 1, behind: [1] });
  });
});
