/**
 * Judges a recorded scheduled-work history again (after a change to the checker, or to read a
 * failure at leisure): `node --import ./tools/typescript-loader/register.js
 * tools/soak/scheduled-work/check-history.ts <history dir>`. Prints the figures and the violations;
 * exits 1 on any.
 */
import { checkScheduledWork, describeSwViolations } from './checker.js';
import { LEASE_MS, VISIBILITY_MS } from './constants.js';
import { HistoryReader } from './history-file.js';

const dir = process.argv[2];
if (!dir) throw new Error('usage: check-history.ts <history dir>');
const reader = new HistoryReader(dir);
reader.read();
const end = reader.events.find((e) => e.op === 'present-at-end');
if (!end)
  process.stdout.write('(no present-at-end record: the run did not finish; schedule presence rules judged against an empty Redis)\n');
const present = new Set((end?.detail ?? '').split(' ').filter(Boolean));
const { violations, figures } = checkScheduledWork(reader.events, {
  visibilityMs: VISIBILITY_MS,
  leaseMs: LEASE_MS,
  presentAtEnd: present,
});
process.stdout.write(`${JSON.stringify(figures, null, 1)}\n${violations.length > 0 ? describeSwViolations(violations) : 'no violation'}\n`);
process.exit(violations.length > 0 ? 1 : 0);
