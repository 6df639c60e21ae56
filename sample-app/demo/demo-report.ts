/** The demo's output: steps, notes, and the claims it checks (printed as they are made, and in the report). */

export interface Check {
  readonly claim: string;
  readonly ok: boolean;
  readonly detail: string;
}

export const checks: Check[] = [];

export const step = (text: string) => console.log(`\n▶ ${text}`);

export const note = (text: string) => console.log(`  ${text}`);

export function check(claim: string, ok: boolean, detail: string): void {
  checks.push({ claim, ok, detail });
  note(`${ok ? '✔' : '✘'} ${claim} (${detail})`);
}
