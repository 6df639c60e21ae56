/**
 * A GitHub-flavoured markdown table with padded columns, so that it reads as well in a terminal as
 * rendered. Columns whose `align` is 'r' are right-aligned (numbers).
 */
export function markdownTable(headers: readonly string[], rows: readonly (readonly string[])[], align?: readonly ('l' | 'r')[]): string {
  const widths = headers.map((h, c) => Math.max(3, h.length, ...rows.map((row) => (row[c] ?? '').length)));
  const pad = (text: string, c: number) => (align?.[c] === 'r' ? text.padStart(widths[c]) : text.padEnd(widths[c]));
  const line = (cells: readonly string[]) => `| ${cells.map((cell, c) => pad(cell ?? '', c)).join(' | ')} |`;
  const rule = `|${widths.map((w, c) => (align?.[c] === 'r' ? `${'-'.repeat(w + 1)}:` : `${'-'.repeat(w + 2)}`)).join('|')}|`;
  return [line(headers), rule, ...rows.map(line)].join('\n');
}
