import { HolderTokens, type WonHold } from '../../../../lib/lock/redlock/holder-tokens.js';

describe('HolderTokens: the token of each Redlock hold this process won', () => {
  const won = (owner: string, fencingToken: string): WonHold => ({ owner, hold: `${owner}:h`, fencingToken });

  it('answers a re-entry with the token the holder was given', () => {
    const tokens = new HolderTokens();
    const hold = won('owner-1', '42');
    tokens.remember('rl:lock:{a}', hold);
    expect(tokens.tokenOf('rl:lock:{a}', 'owner-1')).toBe('42');
  });

  it('keeps locks and owners apart', () => {
    const tokens = new HolderTokens();
    const holds = [won('o1', '1'), won('o2', '2'), won('o1', '3')];
    tokens.remember('rl:lock:{a}', holds[0]);
    tokens.remember('rl:lock:{a}', holds[1]);
    tokens.remember('rl:lock:{b}', holds[2]);
    expect(tokens.tokenOf('rl:lock:{a}', 'o1')).toBe('1');
    expect(tokens.tokenOf('rl:lock:{a}', 'o2')).toBe('2');
    expect(tokens.tokenOf('rl:lock:{b}', 'o1')).toBe('3');
    expect(tokens.tokenOf('rl:lock:{b}', 'o2')).toBeUndefined();
  });

  it('forgets a hold once it ended', () => {
    const tokens = new HolderTokens();
    const hold = won('o1', '5');
    tokens.remember('rl:lock:{a}', hold);
    tokens.forget('rl:lock:{a}', 'o1');
    expect(tokens.tokenOf('rl:lock:{a}', 'o1')).toBeUndefined();
    expect(hold.fencingToken).toBe('5');
  });
});
