import type { ConsumerOptions } from './consumer.interface.js';

/** What `@OnDelayed` records on a method (under `ON_DELAYED_METADATA`). Internal. */
export interface OnDelayedMetadata {
  readonly topic: string;
  readonly options?: ConsumerOptions;
}
