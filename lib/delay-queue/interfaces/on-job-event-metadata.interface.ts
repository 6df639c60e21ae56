import type { JobEventMap } from '../../core/events/job-event-map.js';

/** What `@OnJobEvent` records on a method (under `ON_JOB_EVENT_METADATA`). Internal. */
export interface OnJobEventMetadata {
  /** The topic's name (a `Topic` token is recorded by its name); checked at bootstrap. */
  readonly topic: string;
  /** Checked at bootstrap: a JavaScript caller may pass any value. */
  readonly event: keyof JobEventMap;
}
