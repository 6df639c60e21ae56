import { randomUUID } from 'node:crypto';
import type { OutboxJob } from '../../core/outbox-port/job-outbox-store.js';
import type { PreparedJob } from '../jobs/prepare-job.js';
import { storedForm, type RepeatDefinition } from '../repeat/repeat-definition.js';
import type { OutboxWrite } from './outbox-job-writer.js';

/** The outbox rows of jobs scheduled in a transaction: one row each, with a row id of its own. */
export function jobRowsOf(topic: string, jobs: readonly PreparedJob[]): OutboxJob[] {
  return jobs.map((job) => ({
    rowId: randomUUID(),
    topic,
    jobId: job.id,
    kind: job.kind,
    when: job.when,
    replace: job.replace,
    body: job.tail,
  }));
}

/** The outbox row of a repeat schedule's upsert (`definition`) or, with `undefined`, of the removal of schedule `id`. */
export function scheduleChangeRowOf(topic: string, id: string, definition: RepeatDefinition | undefined): OutboxJob {
  return {
    rowId: randomUUID(),
    topic,
    jobId: id,
    kind: definition ? 'repeat' : 'removeRepeat',
    when: 0,
    replace: false,
    body: definition ? storedForm(definition) : '',
  };
}

/** Rows grouped by topic, in their order. */
export function groupByTopic<Row extends OutboxWrite>(rows: readonly Row[]): Map<string, Row[]> {
  const groups = new Map<string, Row[]>();
  for (const row of rows) {
    let group = groups.get(row.topic);
    if (!group) groups.set(row.topic, (group = []));
    group.push(row);
  }
  return groups;
}
