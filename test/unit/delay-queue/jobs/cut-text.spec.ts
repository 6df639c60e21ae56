import { cutAtCharacter } from '../../../../lib/delay-queue/jobs/cut-text.js';

describe('cutAtCharacter', () => {
  it('keeps a text within the bound as it is', () => {
    expect(cutAtCharacter('abc', 3)).toBe('abc');
    expect(cutAtCharacter('', 3)).toBe('');
  });

  it('cuts to the bound in UTF-16 units', () => {
    expect(cutAtCharacter('abcdef', 4)).toBe('abcd');
  });

  it('never ends in half of a surrogate pair: the character is left out whole', () => {
    const text = 'ab😀cd'; // the emoji is units 2 and 3
    expect(cutAtCharacter(text, 3)).toBe('ab');
    expect(cutAtCharacter(text, 4)).toBe('ab😀');
    expect(cutAtCharacter('😀😀', 1)).toBe('');
  });
});
