import { errorMessage } from '../../../../lib/core/errors/error-message.js';

describe('errorMessage', () => {
  it("gives an Error's message", () => {
    expect(errorMessage(new TypeError('bad type'))).toBe('bad type');
  });

  it('gives the message of an error-like object from another realm or library', () => {
    expect(errorMessage({ message: 'ERR from a proxy' })).toBe('ERR from a proxy');
  });

  it('turns anything else into a string instead of printing undefined', () => {
    expect(errorMessage('plain string')).toBe('plain string');
    expect(errorMessage(undefined)).toBe('undefined');
    expect(errorMessage(null)).toBe('null');
    expect(errorMessage({ message: 42 })).toBe('[object Object]');
    expect(errorMessage(7)).toBe('7');
  });
});
