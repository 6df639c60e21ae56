/**
 * The first `max` UTF-16 units of `text` or fewer, never ending in half of a surrogate pair (a
 * character outside the BMP, such as an emoji, is kept whole or left out): a lone surrogate is not
 * valid UTF-8, and Redis would store U+FFFD in its place.
 */
export function cutAtCharacter(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}
